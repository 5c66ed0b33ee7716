import { Transform, type TransformCallback } from 'node:stream';
import { WavHeaderScanner, durationMs, wavError, type WavHeaderInfo, type WavSource } from './wav.js';
import { TtsTooLongError } from '../errors.js';
import { formatDuration, formatSize } from '../util/units.js';
import type { TtsBounds } from './speech-types.js';

export interface WavDecoderOptions {
  source: WavSource;
  /** Total bytes the transport announced (Content-Length), to detect a cut stream whose header has placeholders. */
  expectedBytes?: number;
  /**
   * At most this much audio and these many bytes (speech-types.ts ttsBounds): past either the
   * stream fails with TtsTooLongError, whatever the header claims; what arrived before it passed.
   */
  bounds?: TtsBounds;
}

/** How much longer than its audio an answer may take to arrive: the player's start, an underrun. */
export function arrivalGraceMs(maxAudioMs: number): number {
  return Math.max(10_000, maxAudioMs / 4);
}

/**
 * WAV bytes in, whole PCM frames out, as they arrive: playback can start on the first frame of a
 * response still being streamed. Emits 'format' with the parsed header before the first frame.
 * A stream that ends early (short of the announced data size, inside a frame, or before its data
 * chunk) fails with the source's error class instead of ending quietly: a truncated utterance is
 * a fault of the service, not a success.
 */
export class WavDecoder extends Transform {
  header: WavHeaderInfo | undefined;
  /** Bytes received, header included. */
  bytesIn = 0;
  /** PCM bytes passed on. */
  dataBytes = 0;
  private readonly scanner: WavHeaderScanner;
  private carry: Buffer = Buffer.alloc(0);
  private dataDone = false;
  private readonly started = performance.now();

  constructor(private readonly opts: WavDecoderOptions) {
    super();
    this.scanner = new WavHeaderScanner(opts.source);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.bytesIn += chunk.length;
    const bounds = this.opts.bounds;
    if (bounds && this.bytesIn > bounds.maxBytes) {
      return callback(new TtsTooLongError(`POST /tts sent more than ${formatSize(bounds.maxBytes)} (tts.max_size); the phrase was cut there`, { operation: 'POST /tts', details: { received: this.bytesIn, max_bytes: bounds.maxBytes } }));
    }
    // A drip too slow to reach either bound: the answer is read at most as slowly as it plays.
    const arriving = performance.now() - this.started;
    if (bounds && arriving > bounds.maxAudioMs + arrivalGraceMs(bounds.maxAudioMs)) {
      return callback(new TtsTooLongError(`POST /tts was still sending after ${formatDuration(arriving)}, longer than the ${formatDuration(bounds.maxAudioMs)} of audio this text may have (tts.max_duration_per_char, tts.max_duration); the phrase was cut there`, { operation: 'POST /tts', details: { received: this.bytesIn, arriving_ms: Math.round(arriving) } }));
    }
    try {
      if (!this.header) {
        const header = this.scanner.push(chunk);
        if (!header) return callback();
        this.header = header;
        this.emit('format', header);
        chunk = this.scanner.remainder;
      }
      this.takeAudio(chunk);
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    const header = this.header;
    if (!header) {
      const what = this.bytesIn === 0 ? 'the body was empty' : `the body ended after ${this.bytesIn} bytes, before the WAV header was complete`;
      return callback(wavError(this.opts.source, what, { bytes: this.bytesIn }));
    }
    const got = this.dataBytes + this.carry.length;
    if (header.dataBytes !== undefined && got < header.dataBytes) {
      return callback(wavError(this.opts.source, `the stream was cut: ${got} of the ${header.dataBytes} audio bytes its header announced arrived`, { received: got, expected: header.dataBytes }));
    }
    if (this.opts.expectedBytes !== undefined && this.bytesIn < this.opts.expectedBytes) {
      return callback(wavError(this.opts.source, `the stream was cut: ${this.bytesIn} of ${this.opts.expectedBytes} bytes (Content-Length) arrived`, { received: this.bytesIn, expected: this.opts.expectedBytes }));
    }
    // A data chunk whose size is not a whole number of frames is sloppy but complete: drop the tail.
    if (this.carry.length > 0 && !this.dataDone) {
      return callback(wavError(this.opts.source, `the stream ends inside an audio frame (${this.carry.length} of ${header.blockAlign} bytes)`, { received: got }));
    }
    callback();
  }

  private takeAudio(chunk: Buffer): void {
    const header = this.header!;
    if (this.dataDone || chunk.length === 0) return;
    if (header.dataBytes !== undefined) {
      const left = header.dataBytes - this.dataBytes - this.carry.length;
      if (chunk.length >= left) {
        // Whatever follows the data chunk (LIST, id3...) is metadata, not audio.
        chunk = chunk.subarray(0, left);
        this.dataDone = true;
      }
    }
    let pcm = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const whole = pcm.length - (pcm.length % header.blockAlign);
    this.carry = Buffer.from(pcm.subarray(whole));
    pcm = pcm.subarray(0, whole);
    if (pcm.length > 0) {
      this.dataBytes += pcm.length;
      this.push(pcm);
    }
    const bounds = this.opts.bounds;
    if (bounds && !this.dataDone && durationMs(header, this.dataBytes) > bounds.maxAudioMs) {
      throw new TtsTooLongError(`POST /tts sent more than ${formatDuration(bounds.maxAudioMs)} of audio for this text (tts.max_duration_per_char, tts.max_duration); the phrase was cut there`, { operation: 'POST /tts', details: { audio_ms: Math.round(durationMs(header, this.dataBytes)), max_audio_ms: bounds.maxAudioMs } });
    }
  }
}
