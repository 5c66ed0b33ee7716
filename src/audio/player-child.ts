// The player process: the only place that loads the native `speaker` module. When ALSA cannot open
// a device, speaker aborts the whole process (SIGABRT, see ../shared/audio-without-hardware.md), so
// it runs here, supervised by src/audio/player.ts, never inside the daemon.
//
// Protocol (declared in player.ts): IPC messages for control, framed PCM on stdin.
//   child -> parent  {type:'ready'}                      speaker loaded, waiting for a job
//   parent -> child  {type:'play', format, device}       then PCM frames on stdin, an empty frame ends it
//   child -> parent  {type:'first-frame'}                the first frames were written to the device
//   child -> parent  {type:'progress', bytes}            PCM bytes of this job handed to ALSA so far (at most
//                                                        every PROGRESS_EVERY_MS, and always after the last write)
//   child -> parent  {type:'done', bytes}                everything played (drained), device closed; ready again
//   child -> parent  {type:'error', message, code}       the device failed; the parent kills the process
// A stop or an interrupt is a kill: it silences the device at once, without a drain.
import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';

// Type-only: erased at compile time, so this process loads nothing of the daemon's code.
import type { PlayerJob, PlayerMessage } from './player-protocol.js';

interface SpeakerOptions {
  channels: number;
  bitDepth: number;
  sampleRate: number;
  signed: boolean;
  device: string;
  samplesPerFrame: number;
}
type SpeakerStream = Writable & { close(flush?: boolean): void };
type SpeakerClass = new (opts: SpeakerOptions) => SpeakerStream;

/**
 * Seconds of sound in each write to ALSA (speaker's samplesPerFrame; its default is 1024 frames,
 * 46 ms at 22,050 Hz). The device starts playing at the first write, so what that write holds is
 * all the device has if this process is then kept off the CPU for a while (a busy terminal, or a
 * CPU quota): 0.2 s rides out such a pause, and still fits ALSA's 0.5 s buffer at once, so the
 * first write returns, and the first-frame report goes, as soon as it is copied.
 */
const WRITE_SECONDS = 0.2;
/**
 * The parent's watchdog reads these reports: a write ALSA never completes (a hung driver) stops
 * them, and the parent kills this process. Trailing-edge, so the last write is always reported and
 * a child idle between two chunks of a slow download is not taken for a hung one.
 */
const PROGRESS_EVERY_MS = 200;

function send(msg: PlayerMessage): void {
  if (process.connected) process.send?.(msg);
}

function describe(err: unknown): { message: string; code: string | undefined } {
  const e = err as { message?: string; code?: string };
  return { message: e?.message ?? String(err), code: e?.code };
}

interface Job {
  /** Returns false when the caller should wait for 'drain'. */
  write(pcm: Buffer): boolean;
  end(): void;
  speaker: SpeakerStream;
}

function startJob(Speaker: SpeakerClass, job: PlayerJob): Job | undefined {
  const { format } = job;
  let failed = false;
  let bytes = 0;
  let written = 0;
  let first = true;
  let report: NodeJS.Timeout | undefined;
  const fail = (err: unknown) => {
    if (failed) return;
    failed = true;
    clearTimeout(report);
    send({ type: 'error', ...describe(err) });
  };
  const onWritten = (n: number) => (err?: Error | null) => {
    if (err || failed) return;
    written += n;
    report ??= setTimeout(() => {
      report = undefined;
      if (!failed) send({ type: 'progress', bytes: written });
    }, PROGRESS_EVERY_MS);
  };
  const writeFrames = Math.max(1, Math.round(format.sampleRate * WRITE_SECONDS));
  let speaker: SpeakerStream;
  try {
    speaker = new Speaker({
      channels: format.channels,
      bitDepth: format.bitsPerSample,
      sampleRate: format.sampleRate,
      // WAV stores 8-bit PCM unsigned and everything wider signed.
      signed: format.bitsPerSample !== 8,
      device: job.device,
      samplesPerFrame: writeFrames,
    });
  } catch (err) {
    fail(err);
    return undefined;
  }
  speaker.on('error', fail);
  speaker.on('close', () => {
    // A late progress report would land in the next job.
    clearTimeout(report);
    if (failed) return;
    send({ type: 'done', bytes });
  });
  const blockAlign = format.channels * (format.bitsPerSample / 8);
  return {
    speaker,
    write(pcm) {
      if (failed) return true;
      bytes += pcm.length;
      if (first) {
        first = false;
        const head = pcm.subarray(0, writeFrames * blockAlign);
        const counted = onWritten(head.length);
        speaker.write(head, (err) => {
          if (!err && !failed) send({ type: 'first-frame' });
          counted(err);
        });
        pcm = pcm.subarray(head.length);
        if (pcm.length === 0) return true;
      }
      return speaker.write(pcm, onWritten(pcm.length));
    },
    end() {
      if (!failed) speaker.end();
    },
  };
}

function main(): void {
  let Speaker: SpeakerClass;
  try {
    Speaker = createRequire(import.meta.url)('speaker') as SpeakerClass;
  } catch (err) {
    send({ type: 'error', ...describe(err) });
    process.disconnect?.();
    return;
  }
  const stdin = process.stdin;
  let job: Job | undefined;
  let buf: Buffer = Buffer.alloc(0);
  let waiting = false;

  // Frames for the next job may arrive before its 'play' message: they wait in `buf`.
  const pump = () => {
    while (job && !waiting && buf.length >= 4) {
      const len = buf.readUInt32LE(0);
      if (buf.length < 4 + len) break;
      const pcm = buf.subarray(4, 4 + len);
      buf = buf.subarray(4 + len);
      const current = job;
      if (len === 0) {
        // The next frames belong to the next job, once this one has drained.
        job = undefined;
        current.end();
        break;
      }
      if (!current.write(pcm)) {
        waiting = true;
        stdin.pause();
        current.speaker.once('drain', () => {
          waiting = false;
          stdin.resume();
          pump();
        });
      }
    }
  };
  stdin.on('data', (data: Buffer) => {
    buf = buf.length === 0 ? data : Buffer.concat([buf, data]);
    pump();
  });
  stdin.on('error', () => undefined);
  process.on('message', (msg: PlayerJob) => {
    if (msg?.type !== 'play' || job) return;
    job = startJob(Speaker, msg);
    pump();
  });
  // The parent went away (crash, kill): nothing else should keep this process alive.
  process.on('disconnect', () => {
    stdin.destroy();
  });
  send({ type: 'ready' });
}

main();
