import { IMAGE_MIMES, sniffImageType, type ImageMime } from '../util/media-sniff.js';

export { readHead, readHeadOrWhole } from '../util/media-sniff.js';

// What a file really is, from its first bytes. The service rejects images that are not really
// JPEG, PNG, BMP or WebP, and a multipart part must carry the Content-Type of its bytes, so both
// the client and the CLI look at the bytes, never at the file name.

export type SniffedType = ImageMime | 'audio/wav';

export const IMAGE_TYPES: readonly SniffedType[] = IMAGE_MIMES;

/** Needs the first 18 bytes at least; pass 64. */
export function sniffMediaType(head: Uint8Array): SniffedType | undefined {
  const image = sniffImageType(head);
  if (image) return image;
  const ascii = (from: number, to: number) => Buffer.from(head.subarray(from, to)).toString('latin1');
  if (head.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'audio/wav';
  return undefined;
}
