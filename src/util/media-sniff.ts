import { openRegularFile } from './safe-open.js';

// What an image really is, from its first bytes: the service refuses images that are not really
// JPEG, PNG, BMP or WebP whatever their name or declared Content-Type, so the client, enrollment
// and the emulator (which must refuse what the service refuses) all judge uploads by this one test.
// faces/image-check.ts is deliberately separate: it judges complete downloads (GIF too, end markers).

export type ImageMime = 'image/jpeg' | 'image/png' | 'image/bmp' | 'image/webp';

export const IMAGE_MIMES: readonly ImageMime[] = ['image/jpeg', 'image/png', 'image/bmp', 'image/webp'];

/** File extension for a sniffed image type. */
export const IMAGE_EXTENSIONS: Readonly<Record<ImageMime, 'jpg' | 'png' | 'bmp' | 'webp'>> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/bmp': 'bmp',
  'image/webp': 'webp',
};

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const BMP_DIB_SIZES = [12, 40, 52, 56, 64, 108, 124];
const WEBP_CHUNKS = ['VP8 ', 'VP8L', 'VP8X'];

/** The image type from the first bytes (needs 18 at least), whatever the file is called. */
export function sniffImageType(head: Uint8Array): ImageMime | undefined {
  const buf = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  const ascii = (from: number, to: number) => buf.toString('latin1', from, to);
  if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) return 'image/jpeg';
  if (buf.length >= 8 && buf.subarray(0, 8).equals(PNG_SIGNATURE)) return 'image/png';
  // BMP: "BM", then a DIB header whose size is one of the known variants ("BM" alone is text).
  if (buf.length >= 18 && ascii(0, 2) === 'BM' && BMP_DIB_SIZES.includes(buf.readUInt32LE(14))) return 'image/bmp';
  if (buf.length >= 16 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP' && WEBP_CHUNKS.includes(ascii(12, 16))) return 'image/webp';
  return undefined;
}

/** Reads at most `bytes` from the start of a file (never the whole file). */
export async function readHead(path: string, bytes = 64): Promise<Buffer> {
  return (await readHeadOrWhole(path, bytes, -1)).head;
}

/**
 * The first `bytes` of a file, and the whole file when it is no larger than `wholeMax` (-1: never).
 * Never blocks on a FIFO given as an image, and refuses anything but a regular file (safe-open.ts).
 * One open, fstat and read serve both (a small upload then goes from memory, client/multipart.ts);
 * a file shorter than its fstat said by the time it is read is refused, not sent cut.
 */
export async function readHeadOrWhole(path: string, bytes: number, wholeMax: number): Promise<{ head: Buffer; whole?: Buffer }> {
  const { fh, st } = await openRegularFile(path);
  try {
    if (st.size > wholeMax) {
      const buf = Buffer.alloc(bytes);
      const { bytesRead } = await fh.read(buf, 0, bytes, 0);
      return { head: buf.subarray(0, bytesRead) };
    }
    const whole = Buffer.allocUnsafe(st.size);
    const { bytesRead } = await fh.read(whole, 0, st.size, 0);
    if (bytesRead !== st.size) throw Object.assign(new Error(`${path} changed while it was read (${bytesRead} of ${st.size} bytes)`), { code: 'ECHANGED' });
    return { head: whole.subarray(0, bytes), whole };
  } finally {
    await fh.close();
  }
}
