import { createWriteStream, type WriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { dirname } from 'node:path';
import { commitTemp, tempPathFor } from '../util/fs-atomic.js';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CallOptions, ServiceClient, TtsRequest } from '../client/types.js';
import { NetworkError, isAgentError, describeError, isFsError, outputFileError } from '../errors.js';
import { WavDecoder } from './wav-decoder.js';
import { durationMs, sizePatches, type WavHeaderInfo } from './wav.js';
import { makeDirSync } from '../util/make-dir.js';
import type { TtsBounds } from './speech-types.js';

/**
 * Writes a WAV that is still arriving to a temp file beside `finalPath`; `commit` makes it visible
 * (fsync + rename) only once the caller has validated the whole stream, with the streaming
 * placeholder sizes (0 / 0xFFFFFFFF) replaced by the real ones, so readers of the cache or of
 * `say --out` always get a complete, self-describing file. Writes are fire-and-forget (the file
 * is local and far faster than the network); errors surface at commit.
 */
export class WavFileWriter {
  readonly tmp: string;
  bytes = 0;
  private out: WriteStream | undefined;
  private failure: Error | undefined;
  private done = false;

  /** `maxBytes`: stop writing (and refuse to commit) beyond this size. */
  constructor(readonly finalPath: string, private readonly maxBytes = Infinity) {
    this.tmp = tempPathFor(finalPath);
  }

  /** False once the writer gave up (too large, write error). */
  get ok(): boolean {
    return !this.failure && !this.done;
  }

  write(chunk: Buffer): void {
    if (!this.ok) return;
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.failure = new Error(`larger than ${this.maxBytes} bytes`);
      void this.abort();
      return;
    }
    if (!this.out) {
      makeDirSync(dirname(this.finalPath));
      this.out = createWriteStream(this.tmp, { mode: 0o644 });
      this.out.on('error', (err) => {
        this.failure ??= err;
      });
    }
    this.out.write(chunk);
  }

  /** Finishes the file; `header`/`dataBytes` come from the decoder that validated the stream. */
  async commit(header: WavHeaderInfo, dataBytes: number): Promise<number> {
    if (!this.ok || !this.out) throw this.failure ?? new Error('nothing was written');
    this.done = true;
    const out = this.out;
    out.end();
    if (!out.writableFinished) await once(out, 'finish');
    if (this.failure) throw this.failure;
    const fh = await open(this.tmp, 'r+');
    try {
      if (header.placeholderSizes) {
        for (const [offset, value] of sizePatches(header, dataBytes, this.bytes)) {
          const b = Buffer.alloc(4);
          b.writeUInt32LE(value);
          await fh.write(b, 0, 4, offset);
        }
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await commitTemp(this.tmp, this.finalPath);
    return this.bytes;
  }

  async abort(): Promise<void> {
    this.done = true;
    const out = this.out;
    if (out && !out.closed) {
      out.destroy();
      await once(out, 'close').catch(() => undefined);
    }
    await rm(this.tmp, { force: true });
  }
}

export interface SavedWav {
  bytes: number;
  audio_ms: number;
  sample_rate: number;
  channels: number;
  bits_per_sample: number;
}

/**
 * `say --out FILE`: streams POST /tts into FILE (temp file + rename), validating the WAV as it
 * arrives; a cut or non-WAV answer, or one past `bounds` (TtsTooLongError), leaves no file
 * behind and fails like playback would.
 */
export async function saveSynthesizedWav(client: Pick<ServiceClient, 'synthesize'>, body: TtsRequest, path: string, bounds: TtsBounds, opts: CallOptions = {}): Promise<SavedWav> {
  const res = await client.synthesize(body, opts);
  const writer = new WavFileWriter(path, bounds.maxBytes);
  const decoder = new WavDecoder({ source: 'service', bounds, ...(res.contentLength !== undefined ? { expectedBytes: res.contentLength } : {}) });
  const tee = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      writer.write(chunk);
      cb(null, chunk);
    },
  });
  try {
    // The PCM itself is not needed here: the decoder only validates.
    decoder.resume();
    await pipeline(res.body, tee, decoder);
    const header = decoder.header!;
    const bytes = await writer.commit(header, decoder.dataBytes);
    return {
      bytes,
      audio_ms: Math.round(durationMs(header, decoder.dataBytes)),
      sample_rate: header.sampleRate,
      channels: header.channels,
      bits_per_sample: header.bitsPerSample,
    };
  } catch (err) {
    await writer.abort();
    if (isAgentError(err)) throw err;
    // A disk that fills up or a folder that goes away is not the network's fault.
    if (isFsError(err)) throw outputFileError(path, err);
    throw new NetworkError(`the POST /tts audio stream broke off after ${decoder.bytesIn} bytes: ${describeError(err)}`, { operation: 'POST /tts', cause: err });
  }
}
