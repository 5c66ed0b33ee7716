import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import type { FormData } from 'undici';
import { InvalidInputError } from '../errors.js';
import type { FileUpload } from './types.js';
import { readHead, sniffMediaType } from './media-types.js';

// Multipart bodies that stream their file part from disk (fs.openAsBlob): a 50 MB WAV is never
// held in memory, and undici still knows the total length. A caller that holds the bytes already
// (enrollment's small images) passes them: no open, no file-backed blob reads per upload. Every file part carries a filename
// and the Content-Type of its bytes; text fields are plain parts; nothing else is added.

export type TextFields = Record<string, string | number | undefined>;

/** Checks once, before any attempt, that the file exists and its bytes match its declared type. */
export async function checkUpload(field: string, file: FileUpload): Promise<void> {
  let head: Buffer;
  try {
    head = file.bytes ? file.bytes.subarray(0, 64) : await readHead(file.path, 64);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
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
}

/**
 * Returns a builder that makes a fresh FormData for each attempt. Blobs from openAsBlob re-read
 * the file every time they are streamed; if the file changes meanwhile the read fails, which the
 * caller avoids by uploading from a copy nothing else writes.
 */
export function multipartBody(fields: TextFields, files: Record<string, FileUpload | undefined>): () => Promise<FormData> {
  return async () => {
    // undici on first use: the CLI imports the face and speaker API helpers (ID and name checks)
    // for commands that never upload, and `--help` must not load the HTTP client. `.default` (the
    // CommonJS module.exports) because the esbuild bundle gives a dynamically imported CommonJS
    // package no named exports; Node's own loader gives both.
    const { FormData } = (await import('undici')).default;
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) if (value !== undefined) form.append(name, String(value));
    for (const [name, file] of Object.entries(files)) {
      if (!file) continue;
      const blob = file.bytes ? new Blob([file.bytes], { type: file.contentType }) : await openAsBlob(file.path, { type: file.contentType });
      form.append(name, blob, file.filename ?? basename(file.path));
    }
    return form;
  };
}
