import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { AbortedError, RecorderError, abortReason } from '../errors.js';

// Raw PCM from the microphone through node-record-lpcm16. The recorder is told the exact number of
// samples to take, so a normal recording ends by itself with exit 0; anything else (no binary, no
// device, a busy device, a child that dies or stalls) becomes a RecorderError that names the
// device and says what to do.

export type RecorderName = 'arecord' | 'sox';

export interface CaptureOptions {
  recorder: RecorderName;
  /** ALSA PCM name, e.g. default, plughw:1,0. */
  device: string;
  sampleRate: number;
  seconds: number;
  /** Environment of the recorder child (PATH, ALSA_CONFIG_PATH); the daemon's when absent. */
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Kill a recorder that has not finished this long after the recording should have ended. */
  graceMs?: number;
  /** Each piece of PCM as it arrives (a live level meter). */
  onAudio?(chunk: Buffer): void;
}

export interface Capture {
  /** Mono signed 16-bit little-endian samples. */
  pcm: Buffer;
  /** Samples asked of the recorder. */
  requestedSamples: number;
}

interface Recording {
  process: ChildProcess;
  stream(): Readable;
}
type RecordFn = (options: Record<string, unknown>) => Recording;

const require = createRequire(import.meta.url);

/** How long a cancelled recorder has to exit after SIGTERM before it is killed. */
const KILL_AFTER_MS = 1000;

const INSTALL_HINT: Record<RecorderName, string> = {
  arecord: 'install it with `apt-get install alsa-utils`',
  sox: 'install it with `apt-get install sox`',
};

/** The recorder command line for one mono 16-bit recording of an exact length. */
export function recorderCommand(o: Pick<CaptureOptions, 'recorder' | 'device' | 'sampleRate'>, samples: number): { cmd: string; args: string[] } {
  if (o.recorder === 'sox') {
    // Input options before the device so ALSA delivers the rate asked for (sox would otherwise
    // open the device at its own rate and resample).
    const pcm = ['-r', String(o.sampleRate), '-c', '1', '-e', 'signed-integer', '-b', '16'];
    return { cmd: 'sox', args: ['-q', '-t', 'alsa', ...pcm, o.device, '-t', 'raw', ...pcm, '-', 'trim', '0', `${samples}s`] };
  }
  return { cmd: 'arecord', args: ['-D', o.device, '-q', '-t', 'raw', '-f', 'S16_LE', '-r', String(o.sampleRate), '-c', '1', '-s', String(samples), '-'] };
}

function shimPath(): string {
  const beside = fileURLToPath(new URL('./recorder-shim.cjs', import.meta.url));
  // tsc does not copy .cjs files: from dist/ use the one in the checkout's src/.
  return existsSync(beside) ? beside : fileURLToPath(new URL('../../src/voiceprint/recorder-shim.cjs', import.meta.url));
}

export async function capturePcm(o: CaptureOptions): Promise<Capture> {
  if (o.signal?.aborted) throw new AbortedError('recording cancelled before it started');
  const requestedSamples = Math.round(o.seconds * o.sampleRate);
  const requestedBytes = requestedSamples * 2;
  const { record } = require('node-record-lpcm16') as { record: RecordFn };
  const command = recorderCommand(o, requestedSamples);
  const recording = record({ recorder: shimPath(), sampleRate: o.sampleRate, channels: 1, agentCommand: { ...command, env: o.env } });
  const child = recording.process;
  const stream = recording.stream();
  const chunks: Buffer[] = [];
  let bytes = 0;
  let stderr = '';
  let spawnError: NodeJS.ErrnoException | undefined;
  let aborted = false;
  let timedOut = false;

  return await new Promise<Capture>((resolve, reject) => {
    // A missing binary is reported here; without a listener it would crash the daemon.
    child.on('error', (err: NodeJS.ErrnoException) => {
      spawnError ??= err;
    });
    // The library reports a non-zero exit as a string on the stream; the 'close' handler below has
    // the same facts, but an 'error' without a listener would throw.
    stream.on('error', () => {});
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    stream.on('data', (chunk: Buffer) => {
      if (bytes >= requestedBytes) return;
      const take = chunk.subarray(0, requestedBytes - bytes);
      chunks.push(take);
      bytes += take.length;
      o.onAudio?.(take);
    });
    let killer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      aborted = true;
      child.kill('SIGTERM');
      // arecord's SIGTERM handler only aborts the PCM: a read blocked on a device that delivers
      // nothing (a stalled USB microphone, ALSA's file plugin on a pipe) is restarted and would
      // hold a cancelled enrollment, and the microphone, until the stall timer.
      killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    };
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, o.seconds * 1000 + (o.graceMs ?? 10_000));

    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      clearTimeout(killer);
      o.signal?.removeEventListener('abort', onAbort);
      // Whole samples only: a child killed mid-write may leave an odd byte.
      const pcm = Buffer.concat(chunks).subarray(0, bytes - (bytes % 2));
      const facts = { recorder: o.recorder, device: o.device, exitCode: code, signal, bytes: pcm.length };
      if (aborted) return reject(new AbortedError(`recording cancelled: ${abortReason(o.signal, 'the agent is stopping')}`, { details: facts }));
      if (spawnError) return reject(spawnFailure(o, spawnError));
      if (timedOut) {
        return reject(new RecorderError(`${o.recorder} on device '${o.device}' did not finish within ${o.seconds} s plus ${(o.graceMs ?? 10_000) / 1000} s; the device stalled: reconnect the microphone or check it with \`arecord -D ${o.device} -d 2 /tmp/t.wav\``, { details: { ...facts, reason: 'stalled' } }));
      }
      if (code !== 0) return reject(exitFailure(o, code, signal, stderr, pcm.length, requestedBytes));
      if (pcm.length === 0) {
        return reject(new RecorderError(`${o.recorder} exited normally but produced no audio data from device '${o.device}'; check the device with \`arecord -D ${o.device} -d 2 /tmp/t.wav\``, { details: { ...facts, reason: 'no-data' } }));
      }
      resolve({ pcm, requestedSamples });
    });
  });
}

function spawnFailure(o: CaptureOptions, err: NodeJS.ErrnoException): RecorderError {
  const details = { recorder: o.recorder, device: o.device, errno: err.code };
  if (err.code === 'ENOENT') {
    return new RecorderError(`cannot record: the recorder program '${o.recorder}' is not installed (not found on PATH); ${INSTALL_HINT[o.recorder]}`, { cause: err, details: { ...details, reason: 'not-installed' } });
  }
  return new RecorderError(`cannot start the recorder '${o.recorder}': ${err.message}; check that it is installed and executable (${INSTALL_HINT[o.recorder]})`, { cause: err, details: { ...details, reason: 'spawn-failed' } });
}

function exitFailure(o: CaptureOptions, code: number | null, signal: NodeJS.Signals | null, stderr: string, bytes: number, requestedBytes: number): RecorderError {
  const said = lastLines(stderr);
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  const details = { recorder: o.recorder, device: o.device, exitCode: code, signal, bytes, stderr: said };
  if (/busy/i.test(stderr)) {
    return new RecorderError(`the microphone device '${o.device}' is busy: another program is recording from it (find it with \`fuser -v /dev/snd/*\`), then try again`, { details: { ...details, reason: 'device-busy' } });
  }
  if (bytes === 0 && /unknown pcm|no such (file|device)|cannot find card|can't open|no default audio device|audio open error/i.test(stderr)) {
    return new RecorderError(`the microphone device '${o.device}' cannot be opened (${said || how}); check audio.input_device against \`arecord -L\` and that the microphone is plugged in`, { details: { ...details, reason: 'device-missing' } });
  }
  if (bytes > 0) {
    const got = (bytes / 2 / o.sampleRate).toFixed(1);
    const want = (requestedBytes / 2 / o.sampleRate).toFixed(1);
    return new RecorderError(`${o.recorder} ${how} after ${got} s of the ${want} s recording from device '${o.device}'${said ? ` (${said})` : ''}; the recording was discarded: check the microphone connection and try again`, { details: { ...details, reason: 'died' } });
  }
  return new RecorderError(`${o.recorder} ${how} before recording anything from device '${o.device}'${said ? ` (${said})` : ''}; check audio.input_device and the microphone`, { details: { ...details, reason: 'failed' } });
}

function lastLines(text: string): string {
  return text.trim().split('\n').map((l) => l.trim()).filter(Boolean).slice(-2).join('; ').slice(0, 300);
}
