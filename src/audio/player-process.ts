import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '../log/logger.js';
import { AudioDeviceError } from '../errors.js';
import type { PlayerMessage } from './player-protocol.js';
import { stderrForwarder } from './player-stderr.js';

// One player process (player-child.ts): spawned with an IPC channel, the tail of its stderr kept
// (ALSA's own words about the device), its readiness and its end awaited without ever rejecting
// out of turn, and every way it can fail told as one AudioDeviceError naming the device.

/** One player process as the supervisor (player.ts) sees it. */
export interface PlayerProcess {
  proc: ChildProcess;
  ready: Promise<void>;
  /** Resolves with how the process ended; never rejects. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderrTail(): string;
  lastError: { message: string; code: string | undefined } | undefined;
  dead: boolean;
}

export interface SpawnOptions {
  /** The compiled player script. */
  script: string;
  /** ALSA PCM name, audio.output_device: named in every error. */
  device: string;
  log: Logger;
  env?: NodeJS.ProcessEnv | undefined;
  /** The process ended (after `dead` is set), whatever the reason. */
  onExit(child: PlayerProcess, code: number | null, signal: NodeJS.Signals | null): void;
}

/** Starts a player process; `ready` rejects (with the device error) if it ends or fails to load `speaker` first. */
export function spawnPlayerProcess(opts: SpawnOptions): PlayerProcess {
  const { log, device } = opts;
  const proc = spawn(process.execPath, [opts.script], {
    stdio: ['pipe', 'ignore', 'pipe', 'ipc'],
    ...(opts.env ? { env: opts.env } : {}),
  });
  let stderr = '';
  const forward = stderrForwarder(log, proc.pid);
  proc.stderr?.setEncoding('utf8').on('data', (s: string) => {
    stderr = (stderr + s).slice(-4096);
    forward.push(s);
  });
  proc.stderr?.on('end', () => forward.flush());
  // A dead child's stdin raises EPIPE; the exit handler reports the real cause.
  proc.stdin?.on('error', () => undefined);
  const child: PlayerProcess = {
    proc,
    ready: undefined as unknown as Promise<void>,
    exited: new Promise((resolve) => {
      proc.once('exit', (code, signal) => resolve({ code, signal }));
      // A process that could not be spawned at all emits 'error' and never 'exit'.
      proc.on('error', () => {
        if (proc.pid === undefined) resolve({ code: null, signal: null });
      });
    }),
    stderrTail: () => stderr,
    lastError: undefined,
    dead: false,
  };
  proc.on('message', (m: PlayerMessage) => {
    if (m.type === 'error') child.lastError = { message: m.message, code: m.code };
  });
  // `on`, not `once`: a second 'error' with no listener would throw in the daemon.
  proc.on('error', (err) => {
    if (proc.pid === undefined) child.lastError = { message: err.message, code: (err as NodeJS.ErrnoException).code };
    else log.debug({ player_pid: proc.pid, err: err.message }, 'player process error');
  });
  void child.exited.then(({ code, signal }) => {
    child.dead = true;
    opts.onExit(child, code, signal);
  });
  child.ready = new Promise<void>((resolve, reject) => {
    const onMsg = (m: PlayerMessage) => {
      if (m.type === 'ready') resolve();
      else if (m.type === 'error') reject(deviceError(device, child, 'the speaker module could not be loaded'));
    };
    proc.on('message', onMsg);
    void child.exited.then(() => reject(deviceError(device, child, 'the player process ended while starting')));
  });
  // An unused child's failure is reported by the play that takes it, not here.
  child.ready.catch(() => undefined);
  return child;
}

/**
 * What went wrong with `child`, for the operator: one short line naming the device and the fix.
 * The step (`what`), how it ended and ALSA's own last lines (its assertion text is no help to an
 * operator) go in the error's details: `--json` output and the log carry them.
 */
export function deviceError(device: string, child: PlayerProcess, what: string, hung?: { how: string; details: Record<string, unknown> }): AudioDeviceError {
  const { exitCode, signalCode } = child.proc;
  const alsa = child.stderrTail().split('\n').map((l) => l.trim()).filter((l) => /ALSA|alsa\.c|error|Assertion/i.test(l)).slice(-3);
  const how = hung?.how ?? child.lastError?.message ?? (signalCode ? `killed by ${signalCode}` : exitCode !== null ? `exit code ${exitCode}` : 'no answer');
  // `speaker` aborts when ALSA cannot open a device (it also probes the "default" device when it
  // loads): on a machine with no sound card, every device.
  const why = signalCode === 'SIGABRT' ? 'ALSA cannot open it (no sound card, or the device is missing)' : `${what}: ${how}`;
  return new AudioDeviceError(
    `cannot play on ALSA device "${device}" (audio.output_device): ${why}; ` +
      "fix: connect the speaker, or set audio.output_device to a device that 'aplay -L' lists",
    { details: { device, step: what, how, signal: signalCode ?? undefined, exit_code: exitCode ?? undefined, alsa, ...hung?.details } },
  );
}

