import { IMAGE_EXTENSIONS, IMAGE_MIMES, sniffImageType, type ImageMime } from '../util/media-sniff.js';

export { readHead } from '../util/media-sniff.js';

// What a file really is, from its first bytes. The service rejects images that are not really
// JPEG, PNG, BMP or WebP, and a multipart part must carry the Content-Type of its bytes, so both
// the client and the CLI look at the bytes, never at the file name.

export type SniffedType = ImageMime | 'audio/wav';

export const IMAGE_TYPES: readonly SniffedType[] = IMAGE_MIMES;

/** File extension for a sniffed type, for cached copies and `faces image -o`. */
export const EXTENSION_OF: Record<SniffedType, string> = { ...IMAGE_EXTENSIONS, 'audio/wav': 'wav' };

/** Needs the first 18 bytes at least; pass 64. */
export function sniffMediaType(head: Uint8Array): SniffedType | undefined {
  const image = sniffImageType(head);
  if (image) return image;
  const ascii = (from: number, to: number) => Buffer.from(head.subarray(from, to)).toString('latin1');
  if (head.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'audio/wav';
  return undefined;
}

export interface WavInfo {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  audioFormat: number;
  /** Bytes of sample data the header declares. */
  dataBytes: number;
}

/**
 * Parses a RIFF/WAVE header from the first bytes of a file and checks it against the file size.
 * Returns a problem string instead of throwing so callers can word the error for their context.
 */
export function parseWavHeader(head: Uint8Array, fileSize: number): WavInfo | { problem: string } {
  const buf = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') {
    return { problem: 'not a WAV file (no RIFF/WAVE header)' };
  }
  let fmt: Omit<WavInfo, 'dataBytes'> | undefined;
  let offset = 12;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('latin1', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (body + 16 > buf.length) return { problem: 'WAV fmt chunk is truncated' };
      fmt = {
        audioFormat: buf.readUInt16LE(body),
        channels: buf.readUInt16LE(body + 2),
        sampleRate: buf.readUInt32LE(body + 4),
        bitsPerSample: buf.readUInt16LE(body + 14),
      };
    } else if (id === 'data') {
      if (!fmt) return { problem: 'WAV data chunk comes before its fmt chunk' };
      if (size === 0xffffffff || size === 0) {
        return { problem: 'WAV header carries a placeholder data size (a streamed recording); rewrite the header with the real size' };
      }
      if (body + size > fileSize) return { problem: `WAV header declares ${size} bytes of audio but the file holds ${fileSize - body}` };
      if (fmt.channels === 0 || fmt.sampleRate === 0) return { problem: 'WAV header declares 0 channels or a 0 Hz sample rate' };
      return { ...fmt, dataBytes: size };
    }
    offset = body + size + (size % 2);
  }
  return { problem: 'no WAV data chunk in the first bytes of the file' };
}
