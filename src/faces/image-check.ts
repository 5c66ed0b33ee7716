import { createHash, type Hash } from 'node:crypto';

// The server's image bytes are checked by content, not by the Content-Type header: a proxy error
// page served with 200, or a body cut short, must never land in the cache that the face-recognition
// program reads. Only the head and the tail of the stream are kept, so a check needs no buffering.

export type ImageType = 'jpeg' | 'png' | 'webp' | 'bmp' | 'gif';

const EXTENSIONS: Record<ImageType, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', bmp: 'bmp', gif: 'gif' };

/** File extension used in `faces/<face_id>.<ext>` for a sniffed type. */
export function extensionFor(type: ImageType): string {
  return EXTENSIONS[type];
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const PNG_IEND = [0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

function startsWith(buf: Uint8Array, bytes: readonly number[], at = 0): boolean {
  if (buf.length < at + bytes.length) return false;
  return bytes.every((b, i) => buf[at + i] === b);
}

function ascii(buf: Uint8Array, at: number, len: number): string {
  return Buffer.from(buf.subarray(at, at + len)).toString('latin1');
}

/** The image type from its first bytes, or undefined when it is none the service accepts. */
export function sniffImageType(head: Uint8Array): ImageType | undefined {
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(head, PNG_SIGNATURE)) return 'png';
  if (ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 4) === 'WEBP') return 'webp';
  if (ascii(head, 0, 2) === 'BM' && head.length >= 6) return 'bmp';
  if (ascii(head, 0, 6) === 'GIF87a' || ascii(head, 0, 6) === 'GIF89a') return 'gif';
  return undefined;
}

/**
 * Why a complete download of `type` is not a whole image (undefined when it looks whole): each
 * format has an end marker or a size in its header that a cut-short body cannot satisfy.
 */
export function incompleteReason(type: ImageType, head: Uint8Array, tail: Uint8Array, bytes: number): string | undefined {
  switch (type) {
    case 'jpeg': {
      // Some encoders pad after the EOI marker; ignore trailing zero bytes.
      let end = tail.length;
      while (end > 0 && tail[end - 1] === 0x00) end--;
      return end >= 2 && tail[end - 2] === 0xff && tail[end - 1] === 0xd9 ? undefined : 'JPEG without its end marker (truncated)';
    }
    case 'png':
      return startsWith(tail, PNG_IEND, tail.length - PNG_IEND.length) ? undefined : 'PNG without its IEND chunk (truncated)';
    case 'webp': {
      const declared = head.length >= 8 ? Buffer.from(head).readUInt32LE(4) + 8 : Infinity;
      return bytes >= declared ? undefined : `WebP of ${bytes} bytes, its header declares ${declared} (truncated)`;
    }
    case 'bmp': {
      const declared = Buffer.from(head).readUInt32LE(2);
      return bytes >= declared ? undefined : `BMP of ${bytes} bytes, its header declares ${declared} (truncated)`;
    }
    case 'gif':
      return tail.length > 0 && tail[tail.length - 1] === 0x3b ? undefined : 'GIF without its trailer (truncated)';
  }
}

const HEAD_BYTES = 32;
const TAIL_BYTES = 32;

/** Watches bytes flowing to disk: keeps the head and tail, hashes, counts, enforces a size cap. */
export class ImageTap {
  bytes = 0;
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);
  private readonly hash: Hash | undefined;

  /** `hashed` false: the caller has the bytes' sha256 already, and sha256() is not called. */
  constructor(private readonly maxBytes: number, private readonly onTooLarge: (bytes: number) => Error, hashed = true) {
    this.hash = hashed ? createHash('sha256') : undefined;
  }

  observe(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) throw this.onTooLarge(this.bytes);
    this.hash?.update(chunk);
    if (this.head.length < HEAD_BYTES) {
      this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
    }
    const joined = chunk.length >= TAIL_BYTES ? Buffer.from(chunk.subarray(chunk.length - TAIL_BYTES)) : Buffer.concat([this.tail, chunk]);
    this.tail = joined.subarray(Math.max(0, joined.length - TAIL_BYTES));
  }

  sha256(): string {
    if (!this.hash) throw new Error('ImageTap made without hashing');
    return this.hash.digest('hex');
  }

  /** The sniffed type, or the reason these bytes are not an acceptable image. */
  verdict(): { type: ImageType } | { problem: string } {
    if (this.bytes === 0) return { problem: 'empty body instead of an image' };
    const type = sniffImageType(this.head);
    if (!type) return { problem: `not a JPEG, PNG, WebP, BMP or GIF image (starts with ${this.head.subarray(0, 8).toString('hex')})` };
    const reason = incompleteReason(type, this.head, this.tail, this.bytes);
    return reason ? { problem: reason } : { type };
  }
}
