import { IMAGE_EXTENSIONS, sniffImageType, type ImageMime } from '../util/media-sniff.js';

// Recognises uploads by their bytes, never by file name or declared Content-Type, as the real
// service must: a PNG renamed face.jpg is a PNG, a text file named face.jpg is refused.

export interface ImageKind {
  mime: ImageMime;
  ext: (typeof IMAGE_EXTENSIONS)[ImageMime];
}

/** Bytes needed by the sniffers below. */
export const SNIFF_BYTES = 64;

export function sniffImage(head: Buffer): ImageKind | undefined {
  const mime = sniffImageType(head);
  return mime && { mime, ext: IMAGE_EXTENSIONS[mime] };
}

/** Other well-known containers, so that a JPEG or an MP3 is not taken for raw PCM. */
export function sniffOtherContainer(head: Buffer): string | undefined {
  if (sniffImage(head)) return 'an image';
  if (head.length >= 4 && ascii(head, 0, 4) === 'RIFF') return 'a RIFF file';
  if (head.length >= 3 && ascii(head, 0, 3) === 'ID3') return 'MP3';
  if (head.length >= 3 && isMpegFrameHeader(head[0]!, head[1]!, head[2]!)) return 'MP3';
  if (head.length >= 4 && ascii(head, 0, 4) === 'OggS') return 'Ogg';
  if (head.length >= 4 && ascii(head, 0, 4) === 'fLaC') return 'FLAC';
  if (head.length >= 8 && ascii(head, 4, 4) === 'ftyp') return 'MP4/M4A';
  if (head.length >= 4 && ascii(head, 0, 4) === '%PDF') return 'PDF';
  if (head.length >= 2 && ascii(head, 0, 2) === 'PK') return 'a ZIP archive';
  return undefined;
}

/** An MPEG audio frame header without an ID3 tag: sync bits, a valid version, layer, bitrate and rate. */
function isMpegFrameHeader(b0: number, b1: number, b2: number): boolean {
  return b0 === 0xff && (b1 & 0xe0) === 0xe0 && ((b1 >> 3) & 3) !== 1 && ((b1 >> 1) & 3) !== 0 && (b2 >> 4) !== 0xf && (b2 >> 4) !== 0 && ((b2 >> 2) & 3) !== 3;
}

export interface WavInfo {
  format: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  dataOffset: number;
  dataBytes: number;
  durationMs: number;
}

/** Reads `len` bytes at `offset` (fewer at the end of the file). */
export type ByteReader = (offset: number, len: number) => Buffer;

/**
 * Checks a WAV file by walking its chunk headers (never loading the audio): RIFF/WAVE, a PCM fmt
 * chunk, a data chunk whose declared size is really there (streaming placeholders such as
 * 0xFFFFFFFF are refused). Returns the problem as a string.
 */
export function parseWav(read: ByteReader, fileSize: number): WavInfo | string {
  const head = read(0, 12);
  if (head.length < 12 || ascii(head, 0, 4) !== 'RIFF' || ascii(head, 8, 4) !== 'WAVE') return 'not a WAV file (no RIFF/WAVE header)';
  const riffSize = head.readUInt32LE(4);
  if (riffSize + 8 > fileSize + 1) return `WAV header declares ${riffSize + 8} bytes but the file has ${fileSize}: write the header with the real sizes`;
  let off = 12;
  let fmt: Omit<WavInfo, 'dataOffset' | 'dataBytes' | 'durationMs'> | undefined;
  for (let chunks = 0; off + 8 <= fileSize && chunks < 64; chunks++) {
    const hdr = read(off, 8);
    const id = ascii(hdr, 0, 4);
    const size = hdr.readUInt32LE(4);
    const body = off + 8;
    if (id === 'fmt ') {
      const f = read(body, Math.min(size, 40));
      if (size < 16 || f.length < 16) return 'WAV fmt chunk is truncated';
      let format = f.readUInt16LE(0);
      // WAVE_FORMAT_EXTENSIBLE carries the real format in its sub-format GUID.
      if (format === 0xfffe && f.length >= 26) format = f.readUInt16LE(24);
      fmt = { format, channels: f.readUInt16LE(2), sampleRate: f.readUInt32LE(4), bitsPerSample: f.readUInt16LE(14) };
    } else if (id === 'data') {
      if (!fmt) return 'WAV data chunk comes before the fmt chunk';
      if (body + size > fileSize) return `WAV data chunk declares ${size} bytes but only ${fileSize - body} follow: write the header with the real sizes`;
      if (fmt.format !== 1) return `WAV format ${fmt.format} is not PCM`;
      if (fmt.channels < 1 || fmt.sampleRate < 1 || ![8, 16, 24, 32].includes(fmt.bitsPerSample)) return 'WAV fmt chunk has impossible values';
      if (size === 0) return 'WAV has no audio data';
      const frame = fmt.channels * (fmt.bitsPerSample / 8);
      return { ...fmt, dataOffset: body, dataBytes: size, durationMs: Math.round((size / frame / fmt.sampleRate) * 1000) };
    }
    off = body + size + (size % 2);
  }
  return fmt ? 'WAV has no data chunk' : 'WAV has no fmt chunk';
}

function ascii(buf: Buffer, start: number, len: number): string {
  return buf.toString('latin1', start, start + len);
}
