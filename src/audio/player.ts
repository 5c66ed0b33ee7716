import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from '../log/logger.js';
import { AbortedError, AudioDeviceError } from '../errors.js';
import { durationMs, type PcmFormat } from './wav.js';
import { pcmFrame, type PlayerJob, type PlayerMessage } from './player-protocol.js';
import { deviceError, spawnPlayerProcess, type PlayerProcess as Child } from './player-process.js';

// Supervises the player processes (player-child.ts). Whatever happens to a child (SIGABRT in
// ALSA, an error event, a kill) becomes an AudioDeviceError naming the device, and the next
// utterance gets a fresh child: the daemon never loads `speaker` itself.

export interface PlayerDeps {
  /** ALSA PCM name, audio.output_device. */
  device: string;
  logger: Logger;
  /** Environment of the player process (tests set ALSA_CONFIG_PATH); inherited when absent. */
  env?: NodeJS.ProcessEnv;
  /** The compiled player script; found next to this module or in dist/ when absent. */
  script?: string;
  /** Keep a started child waiting, so that playback does not wait for Node to boot. Default true. */
  warm?: boolean;
  /**
   * Slack, on top of the length of the audio sent and not yet played, before a child that reports
   * no progress is declared hung and killed. Default 5 s (covers ALSA's drain at the end).
   */
  progressMarginMs?: number;
  /** How long a play waits for its child to load `speaker` and say ready. Default 15 s. */
  startTimeoutMs?: number;
}

const DEFAULT_PROGRESS_MARGIN_MS = 5000;
const DEFAULT_START_TIMEOUT_MS = 15_000;
/** close() waits this long for killed children (one stuck in the kernel cannot die) before giving up. */
const CLOSE_TIMEOUT_MS = 3000;

export interface PlayOptions {
  signal?: AbortSignal;
  /** Called when the child reports the first frames written to the device. */
  onFirstFrame?: () => void;
}

export interface Player {
  /** Plays whole PCM frames from `pcm` until it ends; resolves once the device drained. */
  play(format: PcmFormat, pcm: Readable, opts?: PlayOptions): Promise<{ bytes: number }>;
  /** Starts a waiting child if warm mode is on and none is waiting. */
  warmUp(): void;
  close(): Promise<void>;
}

/** The player script: beside this module when running from dist/, else dist/audio/ of the checkout. */
export function defaultPlayerScript(): string {
  const here = fileURLToPath(new URL('./player-child.js', import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL('../../dist/audio/player-child.js', import.meta.url));
}

export function createPlayer(deps: PlayerDeps): Player {
  const script = deps.script ?? defaultPlayerScript();
  const log = deps.logger;
  const warmMode = deps.warm ?? true;
  const progressMarginMs = deps.progressMarginMs ?? DEFAULT_PROGRESS_MARGIN_MS;
  const startTimeoutMs = deps.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  let warm: Child | undefined;
  const active = new Set<Child>();
  let closed = false;

  function spawnChild(): Child {
    return spawnPlayerProcess({
      script, device: deps.device, log, env: deps.env,
      onExit(child, code, signal) {
        if (warm === child) {
          // Nothing respawns it here (with no sound card it would die again at once, forever): the
          // next utterance starts its own child and reports the device error.
          warm = undefined;
          log.warn({ player_pid: child.proc.pid, code, signal, err: deviceError(deps.device, child, 'the waiting player process ended').message }, 'player process ended while idle');
        } else log.debug({ player_pid: child.proc.pid, code, signal }, 'player process ended');
      },
    });
  }

  /** Sends PCM chunks as stdin frames, honouring the pipe's backpressure, then the end frame. */
  async function feed(pcm: Readable, stdin: Writable, signal: AbortSignal, sent: (bytes: number) => void): Promise<void> {
    for await (const chunk of pcm) {
      const ok = stdin.write(pcmFrame(chunk as Buffer));
      sent((chunk as Buffer).length);
      if (!ok) await once(stdin, 'drain', { signal });
    }
    stdin.write(pcmFrame());
    sent(0);
  }

  /** Takes the warm child or spawns one (registered in `active` either way), then waits until it is ready. */
  function acquire(): Child {
    let child = warm && !warm.dead ? warm : undefined;
    warm = undefined;
    // A warm child that died while waiting (device gone at load) says nothing about now: retry.
    child ??= spawnChild();
    active.add(child);
    return child;
  }

  // Bounded: a child stuck while loading `speaker` (ALSA probing a device that never answers) would
  // otherwise hold the utterance and the whole queue behind it.
  async function untilReady(child: Child, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) throw abortedError(signal);
    let onAbort: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        child.ready,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(deviceError(deps.device, child, 'the player process did not start', {
            how: `no ready report within ${formatSeconds(startTimeoutMs)} (it was killed)`,
            details: { reason: 'start-timeout', waited_ms: startTimeoutMs },
          })), startTimeoutMs);
          if (signal) signal.addEventListener('abort', (onAbort = () => reject(abortedError(signal))), { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  // play() owns `pcm` from the call on: on any failure (even before a child is up) it destroys it,
  // so that whoever produces the audio never waits on backpressure from a player that is gone.
  async function play(format: PcmFormat, pcm: Readable, opts: PlayOptions = {}): Promise<{ bytes: number }> {
    let child: Child | undefined;
    let failure: unknown;
    try {
      if (closed) throw new AbortedError('the player is closed');
      if (opts.signal?.aborted) throw abortedError(opts.signal);
      child = acquire();
      await untilReady(child, opts.signal);
      return await run(child, format, pcm, opts);
    } catch (err) {
      failure = err;
      // No error argument: the producer's pipeline may have finished already (the whole phrase
      // buffered), and an 'error' nobody listens to would be thrown in the daemon.
      pcm.destroy();
      throw err;
    } finally {
      if (child) release(child, failure);
    }
  }

  function release(child: Child, failure: unknown): void {
    active.delete(child);
    // A child that finished cleanly plays the next utterance; any other is dropped.
    if (failure === undefined && warmMode && !closed && !(warm && !warm.dead)) {
      warm = child;
      return;
    }
    retire(child);
    // After a device failure the next utterance spawns its own child: a warm one would most
    // likely die the same way in the meantime (speaker aborts at load with no sound card).
    if (!closed && !(failure instanceof AudioDeviceError)) warmUp();
  }

  function retire(child: Child): void {
    if (!child.dead) child.proc.kill('SIGKILL');
  }

  function run(child: Child, format: PcmFormat, pcm: Readable, opts: PlayOptions): Promise<{ bytes: number }> {
    const { proc } = child;
    return new Promise<{ bytes: number }>((resolve, reject) => {
      let settled = false;
      const feeding = new AbortController();
      // The progress watchdog. A child owes an answer while it holds audio it has not reported
      // played, or the end of the utterance without its 'done'. A healthy one plays that audio in
      // about its own length (ALSA takes it in real time), so silence for longer than that plus a
      // margin means it hangs: a write ALSA never completes, or a process that stopped reading.
      // Nothing is owed while the child waits for audio still downloading (utterance.ts bounds that).
      // On the monotonic clock: the wall clock set forward mid-utterance (NTP) killed the player.
      let sent = 0;
      let acked = 0;
      let ended = false;
      let lastSign = performance.now();
      let watchdog: NodeJS.Timeout | undefined;
      const rearm = () => {
        clearTimeout(watchdog);
        watchdog = undefined;
        if (settled || !(sent > acked || ended)) return;
        const pendingMs = durationMs(format, sent - acked);
        const due = lastSign + pendingMs + progressMarginMs;
        watchdog = setTimeout(() => {
          const silentMs = performance.now() - lastSign;
          settle(deviceError(deps.device, child, 'the player process stopped responding', {
            how: `nothing played for ${formatSeconds(silentMs)} with ${formatSeconds(pendingMs)} of audio waiting; it was killed`,
            details: { reason: 'hung', silent_ms: silentMs, pending_audio_ms: Math.round(pendingMs) },
          }));
        }, Math.max(0, due - performance.now()));
      };
      // An 'exit' listener, removed at the end, not a reaction on child.exited: a warm child plays
      // phrase after phrase for months, its `exited` stays pending all that time, and every
      // reaction on it would keep its phrase's settle() and with it the decoder, the streams and
      // their buffers.
      const onExit = () => settle(deviceError(deps.device, child, 'the player process ended before the audio was played'));
      const settle = (err: unknown, value?: { bytes: number }) => {
        if (settled) return;
        settled = true;
        clearTimeout(watchdog);
        feeding.abort();
        opts.signal?.removeEventListener('abort', onAbort);
        proc.off('message', onMsg);
        proc.off('exit', onExit);
        if (err) {
          retire(child);
          reject(err);
        } else resolve(value!);
      };
      const onAbort = () => settle(abortedError(opts.signal!));
      const onMsg = (m: PlayerMessage) => {
        lastSign = performance.now();
        if (m.type === 'progress') acked = Math.max(acked, m.bytes);
        if (m.type === 'first-frame') opts.onFirstFrame?.();
        else if (m.type === 'done') settle(undefined, { bytes: m.bytes });
        else if (m.type === 'error') settle(deviceError(deps.device, child, 'playback failed'));
        rearm();
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      proc.on('message', onMsg);
      if (child.dead || proc.exitCode !== null || proc.signalCode !== null) queueMicrotask(onExit);
      else proc.once('exit', onExit);
      // With a callback a closed channel is reported here, not as an 'error' event; the exit
      // that follows settles with the real cause (a kill if it is somehow still alive).
      proc.send({ type: 'play', format, device: deps.device } satisfies PlayerJob, (err) => {
        if (err) retire(child);
      });
      const onSent = (bytes: number) => {
        // The clock starts when the child is handed something to do, not when it last spoke.
        if (!(sent > acked || ended)) lastSign = performance.now();
        if (bytes === 0) ended = true;
        sent += bytes;
        rearm();
      };
      feed(pcm, proc.stdin!, feeding.signal, onSent).catch((err: unknown) => {
        // The source failed (cut stream, bad WAV): that is the utterance's error. A broken pipe
        // to the child is reported by the child's exit, with its cause.
        if (pcm.errored) settle(pcm.errored);
        else if (!feeding.signal.aborted) setTimeout(() => settle(err), 500);
      });
    });
  }

  function warmUp(): void {
    if (!warmMode || closed || (warm && !warm.dead)) return;
    warm = spawnChild();
  }

  async function close(): Promise<void> {
    closed = true;
    const all = [...active, ...(warm ? [warm] : [])];
    warm = undefined;
    for (const c of all) retire(c);
    // SIGKILL cannot end a process blocked inside a driver until that call returns: the daemon's
    // shutdown must not wait for it (systemd's TimeoutStopSec would then kill everything).
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), CLOSE_TIMEOUT_MS)));
    const how = await Promise.race([Promise.all(all.map((c) => c.exited)), gaveUp]);
    clearTimeout(timer);
    if (how === 'timeout') {
      const stuck = all.filter((c) => !c.dead);
      for (const c of stuck) c.proc.unref();
      log.error({ player_pids: stuck.map((c) => c.proc.pid), device: deps.device }, `player process still alive ${formatSeconds(CLOSE_TIMEOUT_MS)} after SIGKILL (stuck in the ALSA driver); not waiting for it`);
    }
  }

  return { play, warmUp, close };
}

function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function abortedError(signal: AbortSignal): AbortedError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'playback was stopped';
  return new AbortedError(reason, { cause: signal.reason });
}
