import { BadResponseError, InvalidInputError, type AgentError } from '../errors.js';

// WAV (RIFF/WAVE) header handling shared by playback (the /tts stream, the TTS cache) and capture
// (the voiceprint recorder writes its own header). Only integer PCM is accepted: that is what ALSA
// plays through `speaker` without conversion, and what the service documents.

export interface PcmFormat {
  sampleRate: number;
  channels: number;
  /** Bits per sample as stored in the data chunk (container size): 8, 16, 24 or 32. */
  bitsPerSample: 8 | 16 | 24 | 32;
}

export interface WavHeaderInfo extends PcmFormat {
  /** Bytes per frame (all channels of one sample instant). */
  blockAlign: number;
  /** 1 = WAVE_FORMAT_PCM, 0xFFFE = WAVE_FORMAT_EXTENSIBLE with the PCM subtype. */
  formatTag: number;
  /** Bytes of audio the header announces; undefined for streamed placeholders (0 / 0xFFFFFFFF). */
  dataBytes: number | undefined;
  /** Offset of the first audio byte in the file. */
  dataOffset: number;
  /** True when the RIFF or data size is a streaming placeholder (0 or 0xFFFFFFFF). */
  placeholderSizes: boolean;
  /** 'RF64' files carry 64-bit sizes in a ds64 chunk. */
  container: 'RIFF' | 'RF64';
}

/** Where the WAV came from decides the error class: a bad /tts body is the service's fault. */
export type WavSource = 'service' | 'input';

export const WAVE_FORMAT_PCM = 0x0001;
export const WAVE_FORMAT_IEEE_FLOAT = 0x0003;
export const WAVE_FORMAT_ALAW = 0x0006;
export const WAVE_FORMAT_MULAW = 0x0007;
export const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
/** KSDATAFORMAT_SUBTYPE_PCM after its first two bytes (which hold the format tag). */
const GUID_TAIL = Buffer.from('000000001000800000aa00389b71', 'hex');
const PLACEHOLDER_32 = 0xffffffff;

const TAG_NAMES: Record<number, string> = {
  [WAVE_FORMAT_IEEE_FLOAT]: '32/64-bit IEEE float',
  [WAVE_FORMAT_ALAW]: 'A-law',
  [WAVE_FORMAT_MULAW]: 'mu-law',
  0x0002: 'Microsoft ADPCM',
  0x0011: 'IMA ADPCM',
  0x0031: 'GSM 6.10',
  0x0055: 'MP3',
};

export function wavError(source: WavSource, message: string, details: Record<string, unknown> = {}): AgentError {
  if (source === 'service') {
    return new BadResponseError(`POST /tts returned audio that cannot be played: ${message}`, { operation: 'POST /tts', details });
  }
  return new InvalidInputError(`${message}; convert it with \`sox IN.wav -e signed-integer -b 16 OUT.wav\``, { details });
}

/** A short printable view of the first bytes, so that "not a WAV" says what it was instead. */
export function describeStart(buf: Buffer): string {
  const head = buf.subarray(0, 48).toString('latin1');
  const printable = head.replace(/[^\x20-\x7e]/g, '.');
  return JSON.stringify(printable);
}

/**
 * Parses the `fmt ` chunk body. Throws the source's error class for anything that is not integer
 * PCM, naming what the body was.
 */
export function parseFmtChunk(body: Buffer, source: WavSource): Omit<WavHeaderInfo, 'dataBytes' | 'dataOffset' | 'placeholderSizes' | 'container'> {
  if (body.length < 16) throw wavError(source, `its fmt chunk is ${body.length} bytes, shorter than the 16 a PCM header needs`);
  let formatTag = body.readUInt16LE(0);
  const channels = body.readUInt16LE(2);
  const sampleRate = body.readUInt32LE(4);
  const blockAlign = body.readUInt16LE(12);
  const bitsPerSample = body.readUInt16LE(14);
  const declaredTag = formatTag;
  if (formatTag === WAVE_FORMAT_EXTENSIBLE) {
    if (body.length < 40) throw wavError(source, `its WAVE_FORMAT_EXTENSIBLE fmt chunk is ${body.length} bytes, shorter than 40`);
    const sub = body.subarray(24, 40);
    if (!sub.subarray(2).equals(GUID_TAIL)) throw wavError(source, 'it is WAVE_FORMAT_EXTENSIBLE with a sub-format that is not PCM', { subFormat: sub.toString('hex') });
    formatTag = sub.readUInt16LE(0);
  }
  if (formatTag !== WAVE_FORMAT_PCM) {
    const name = TAG_NAMES[formatTag] ?? `format tag 0x${formatTag.toString(16).padStart(4, '0')}`;
    throw wavError(source, `it is encoded as ${name}; only integer PCM (8, 16, 24 or 32 bit) can be played`, { formatTag });
  }
  if (bitsPerSample !== 8 && bitsPerSample !== 16 && bitsPerSample !== 24 && bitsPerSample !== 32) {
    throw wavError(source, `it has ${bitsPerSample} bits per sample; only 8, 16, 24 or 32 bit PCM can be played`, { bitsPerSample });
  }
  if (channels < 1) throw wavError(source, 'its header says 0 channels');
  if (sampleRate < 1) throw wavError(source, 'its header says a sample rate of 0');
  const expectedAlign = channels * (bitsPerSample / 8);
  if (blockAlign !== expectedAlign) {
    throw wavError(source, `its block align is ${blockAlign}, but ${channels} channel(s) of ${bitsPerSample}-bit samples need ${expectedAlign}`);
  }
  return { formatTag: declaredTag, channels, sampleRate, blockAlign, bitsPerSample };
}

/**
 * Sizes a streaming writer puts in a header before it knows the length: 0, 0xFFFFFFFF, and
 * espeak-ng's 0x7FFFF0xx (no TTS answer is 2 GB long). Such a stream ends where its bytes end.
 */
export function isPlaceholderSize(size: number): boolean {
  return size === 0 || size >= 0x7fff0000;
}

/** Parses a complete header held in memory (e.g. the start of a file). */
export function parseWavHeader(buf: Buffer, source: WavSource = 'input'): WavHeaderInfo {
  const found = new WavHeaderScanner(source).push(buf);
  if (!found) throw wavError(source, `the header ends before its data chunk (${buf.length} bytes read)`);
  return found;
}

/**
 * Incremental header scanner: feed bytes until it returns the header; `consumed` then says how many
 * of the bytes fed so far belong to the header. Other chunks (LIST, fact, cue...) are skipped without
 * being buffered, so a large metadata chunk costs no memory.
 */
export class WavHeaderScanner {
  private buf: Buffer = Buffer.alloc(0);
  /** Absolute offset of buf[0] in the stream. */
  private base = 0;
  private skip = 0;
  private fmt: ReturnType<typeof parseFmtChunk> | undefined;
  private ds64DataSize: number | undefined;
  private container: 'RIFF' | 'RF64' | undefined;
  private riffPlaceholder = false;
  /** Stream offset just after the header, once found. */
  consumed = 0;
  /** Bytes fed after the header (the start of the audio), once found. */
  remainder: Buffer = Buffer.alloc(0);

  constructor(private readonly source: WavSource, private readonly maxHeaderBytes = 1024 * 1024) {}

  /** Returns the header once complete; bytes after `consumed` are audio (the caller slices them). */
  push(chunk: Buffer): WavHeaderInfo | undefined {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    for (;;) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, this.buf.length);
        this.skip -= n;
        this.advance(n);
        if (this.skip > 0) return undefined;
      }
      if (this.base > this.maxHeaderBytes) {
        throw wavError(this.source, `no data chunk in the first ${this.maxHeaderBytes} bytes`);
      }
      if (this.container === undefined) {
        if (this.buf.length < 12) {
          if (this.buf.length >= 4 && !['RIFF', 'RF64'].includes(this.buf.toString('latin1', 0, 4))) this.notWav();
          return undefined;
        }
        const id = this.buf.toString('latin1', 0, 4);
        if (id === 'RIFX' || id === 'FFIR') throw wavError(this.source, 'it is a big-endian RIFX file; only little-endian RIFF WAV can be played');
        if ((id !== 'RIFF' && id !== 'RF64') || this.buf.toString('latin1', 8, 12) !== 'WAVE') this.notWav();
        this.container = id as 'RIFF' | 'RF64';
        this.riffPlaceholder = isPlaceholderSize(this.buf.readUInt32LE(4));
        this.advance(12);
        continue;
      }
      if (this.buf.length < 8) return undefined;
      const chunkId = this.buf.toString('latin1', 0, 4);
      const size = this.buf.readUInt32LE(4);
      if (chunkId === 'data') {
        if (!this.fmt) throw wavError(this.source, 'its data chunk comes before the fmt chunk');
        let dataBytes: number | undefined = size;
        if (this.container === 'RF64' && size === PLACEHOLDER_32) dataBytes = this.ds64DataSize;
        if (dataBytes !== undefined && isPlaceholderSize(dataBytes)) dataBytes = undefined;
        const placeholderSizes = this.container === 'RIFF' && (this.riffPlaceholder || dataBytes === undefined);
        this.consumed = this.base + 8;
        this.remainder = this.buf.subarray(8);
        return { ...this.fmt, dataBytes, dataOffset: this.consumed, placeholderSizes, container: this.container };
      }
      if (chunkId === 'fmt ' || chunkId === 'ds64') {
        if (size > 4096) throw wavError(this.source, `its ${chunkId.trim()} chunk claims ${size} bytes`);
        if (this.buf.length < 8 + size) return undefined;
        const body = this.buf.subarray(8, 8 + size);
        if (chunkId === 'fmt ') this.fmt = parseFmtChunk(body, this.source);
        else if (body.length >= 16) this.ds64DataSize = Number(body.readBigUInt64LE(8));
        this.advance(8 + size + (size & 1));
        continue;
      }
      if (!/^[\x20-\x7e]{4}$/.test(chunkId)) {
        throw wavError(this.source, `it has a corrupt chunk header at byte ${this.base} (${describeStart(this.buf.subarray(0, 8))})`);
      }
      this.advance(8);
      this.skip = size + (size & 1);
    }
  }

  private advance(n: number): void {
    this.buf = this.buf.subarray(n);
    this.base += n;
  }

  private notWav(): never {
    throw wavError(this.source, `it is not a RIFF/WAVE file (it starts with ${describeStart(this.buf)})`);
  }
}

/**
 * A canonical 44-byte PCM header. Pass the real data size: files we write (cache entries, `say
 * --out`, voiceprint recordings) never carry streaming placeholders (spec-notes.md).
 */
export function wavHeader(format: PcmFormat, dataBytes: number): Buffer {
  const blockAlign = format.channels * (format.bitsPerSample / 8);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(Math.min(36 + dataBytes, PLACEHOLDER_32), 4);
  h.write('WAVE', 8, 'latin1');
  h.write('fmt ', 12, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(WAVE_FORMAT_PCM, 20);
  h.writeUInt16LE(format.channels, 22);
  h.writeUInt32LE(format.sampleRate, 24);
  h.writeUInt32LE(format.sampleRate * blockAlign, 28);
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(format.bitsPerSample, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** A whole WAV file in memory: header + PCM. */
export function encodeWav(format: PcmFormat, pcm: Buffer): Buffer {
  return Buffer.concat([wavHeader(format, pcm.length), pcm]);
}

/**
 * The size fields to rewrite in a file whose header carried placeholders, once its real length is
 * known: [offset, value] pairs (little-endian uint32).
 */
export function sizePatches(header: WavHeaderInfo, dataBytes: number, fileBytes: number): Array<[number, number]> {
  if (header.container !== 'RIFF') return [];
  return [[4, Math.min(fileBytes - 8, PLACEHOLDER_32)], [header.dataOffset - 4, Math.min(dataBytes, PLACEHOLDER_32)]];
}

export function durationMs(format: PcmFormat, bytes: number): number {
  return (bytes / (format.channels * (format.bitsPerSample / 8)) / format.sampleRate) * 1000;
}
