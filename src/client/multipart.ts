import { randomUUID } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { InvalidInputError } from '../errors.js';
import type { FileUpload } from './types.js';
import type { StreamBody } from './transport.js';
import { readHeadOrWhole, sniffMediaType } from './media-types.js';

// Multipart bodies with their length known in advance (sent with Content-Length). Parts held in
// memory (text fields, enrollment's small images) are sent as one buffer. A file given by path (a
// 50 MB WAV) is read from disk piece by piece as it is sent, never held whole. Every file part
// carries a filename and the Content-Type of its bytes; text fields are plain parts; nothing else is added. Names, filenames
// and values are encoded as undici's FormData (HTML's multipart/form-data algorithm) did, which
// the service accepted.

export type TextFields = Record<string, string | number | undefined>;

/** A request body with its type: what a multipart builder hands to http-core. */
export interface EncodedBody {
  contentType: string;
  data: Buffer | StreamBody;
}

/**
 * A file given by path up to this size is read whole when it is checked and sent from memory, like
 * a caller's `bytes`: one open and read instead of a look at its head, a stat and a stream. Every
 * attempt then sends the same bytes. Larger files (a long WAV) are streamed.
 */
export const WHOLE_READ_MAX = 256 * 1024;

/**
 * Checks once, before any attempt, that the file exists and its bytes match its declared type.
 * Returns the upload to send: a small file given by path comes back with its `bytes`.
 */
export async function checkUpload(field: string, file: FileUpload): Promise<FileUpload> {
  let head: Buffer;
  let whole: Buffer | undefined;
  try {
    if (file.bytes) head = file.bytes.subarray(0, 64);
    else ({ head, whole } = await readHeadOrWhole(file.path, 64, WHOLE_READ_MAX));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    if (code === 'ECHANGED') throw fileChanged(field, file.path, 'read', err);
    throw new InvalidInputError(`${field}: cannot read ${file.path} (${code})`, { cause: err, details: { path: file.path } });
  }
  const sniffed = sniffMediaType(head);
  const declared = file.contentType.split(';')[0]!.trim().toLowerCase();
  const sniffable = declared.startsWith('image/') || declared === 'audio/wav' || declared === 'audio/x-wav' || declared === 'audio/wave';
  const matches = sniffed === declared || (sniffed === 'audio/wav' && sniffable && declared.startsWith('audio/'));
  if ((sniffed && !matches) || (!sniffed && sniffable)) {
    throw new InvalidInputError(
      `${field}: ${file.path} is declared ${declared} but its bytes are ${sniffed ?? 'not a recognised image or WAV'}; send a JPEG, PNG, BMP, WebP or WAV file`,
      { details: { path: file.path, declared, sniffed: sniffed ?? null } },
    );
  }
  return whole ? { ...file, bytes: whole } : file;
}

/** A file that changed under the client: refused as bad input, never sent cut or as a mix of two versions. */
function fileChanged(field: string, path: string, during: 'read' | 'uploaded', cause?: unknown): InvalidInputError {
  return new InvalidInputError(`${field}: ${path} changed while it was being ${during}; upload a file nothing else writes to`, { ...(cause === undefined ? {} : { cause }), details: { path } });
}

const escapeQuoted = (s: string) => s.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22');
const crlf = (s: string) => s.replace(/\r?\n|\r/g, '\r\n');

interface DiskPart {
  field: string;
  path: string;
  size: number;
  mtimeMs: number;
}

const CHUNK = 64 * 1024;

/**
 * The file's bytes as it was when the body was built. Like a Blob from fs.openAsBlob, a file that
 * changed since (size or mtime) fails the upload rather than sending a mix of two versions: upload
 * from a copy nothing else writes.
 */
async function* diskChunks(part: DiskPart): AsyncGenerator<Buffer> {
  const changed = () => fileChanged(part.field, part.path, 'uploaded');
  let fh;
  try {
    fh = await open(part.path, 'r');
  } catch (err) {
    throw new InvalidInputError(`${part.field}: cannot read ${part.path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err, details: { path: part.path } });
  }
  try {
    const st = await fh.stat();
    if (st.size !== part.size || st.mtimeMs !== part.mtimeMs) throw changed();
    for (let at = 0; at < part.size;) {
      // A fresh buffer per piece: the socket may still hold the previous one.
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, part.size - at));
      const { bytesRead } = await fh.read(buf, 0, buf.length, at);
      if (bytesRead === 0) throw changed();
      at += bytesRead;
      yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

/**
 * Returns a builder that encodes the body afresh for each attempt (a file on disk is read again,
 * and checked against its size and mtime at build time).
 */
export function multipartBody(fields: TextFields, files: Record<string, FileUpload | undefined>): () => Promise<EncodedBody> {
  return async () => {
    // randomUUID draws from a cached batch of entropy: randomBytes cost ~15 µs per upload here.
    const boundary = `----terminal-agent-${randomUUID()}`;
    const parts: (Buffer | DiskPart)[] = [];
    let text = '';
    for (const [name, value] of Object.entries(fields)) {
      if (value === undefined) continue;
      text += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(crlf(name))}"\r\n\r\n${crlf(String(value))}\r\n`;
    }
    for (const [name, file] of Object.entries(files)) {
      if (!file) continue;
      const filename = file.filename || basename(file.path) || name;
      text += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(crlf(name))}"; filename="${escapeQuoted(filename)}"\r\n`
        + `Content-Type: ${file.contentType}\r\n\r\n`;
      parts.push(Buffer.from(text, 'utf8'));
      if (file.bytes) {
        parts.push(file.bytes);
      } else {
        const st = await stat(file.path);
        parts.push({ field: name, path: file.path, size: st.size, mtimeMs: st.mtimeMs });
      }
      text = '\r\n';
    }
    parts.push(Buffer.from(`${text}--${boundary}--\r\n`, 'utf8'));
    const contentType = `multipart/form-data; boundary=${boundary}`;
    // Held in memory: one buffer, which goes out in one write with the head.
    if (parts.every((p): p is Buffer => Buffer.isBuffer(p))) return { contentType, data: Buffer.concat(parts) };
    const length = parts.reduce((n, p) => n + (Buffer.isBuffer(p) ? p.length : p.size), 0);
    return {
      contentType,
      data: {
        length,
        async *chunks() {
          for (const p of parts) {
            if (Buffer.isBuffer(p)) yield p;
            else yield* diskChunks(p);
          }
        },
      },
    };
  };
}
