import { hash } from 'node:crypto';
import { rm, stat, writeFile } from 'node:fs/promises';
import { readHead } from '../util/media-sniff.js';
import type { Kind, OutboxRow } from './types.js';
import { EnrollInputError } from './validators.js';

// Small face images travel from memory. The claim reads the original once (hash, image check,
// staged copy written from the same buffer) and the upload reads the staged copy once and sends
// those bytes: no file-backed blob, no second look at the header, and nothing an operator does to
// the original can change what is sent.
//
// Their staged copy is a hard link to the original where one can be made (claim.ts), else written
// without an fsync (and without the staging folder's): an fsync each was one of the per-file
// journal commits of a burst. kill -9 loses nothing that was written; only a power failure can
// leave a queued row with a missing or torn copy, and an operator rewriting the original in place
// changes a linked copy with it. The upload therefore checks the copy against the hash recorded
// at the claim, and when it does not match takes the original again, if it is still the file
// that was claimed (its size, mtime and hash); the original never leaves the inbox before the row
// is done, so that is the normal case.

/** Face images up to this size are staged without fsync and uploaded from memory. */
export const IN_MEMORY_MAX = 1024 * 1024;

export function stagedInMemory(kind: Kind, size: number): boolean {
  return kind === 'faces' && size <= IN_MEMORY_MAX;
}

// crypto.hash (Node 20.12 on): one call, no Hash object.
export const sha256Of = (buf: Buffer): string => hash('sha256', buf, 'hex');

/** The file's bytes when they are exactly `size` long with this sha256 (one byte more is read, to see growth). */
async function readIfHash(path: string, size: number, sha256: string): Promise<Buffer | undefined> {
  // readHead opens like every read of an enrollment file: non-blocking, regular files only.
  const buf = await readHead(path, size + 1).catch(() => undefined);
  return buf && buf.length === size && sha256Of(buf) === sha256 ? buf : undefined;
}

/** The staged copy's bytes when it is intact (a small face image whose copy matches its hash). */
export async function readStagedIfIntact(row: OutboxRow): Promise<Buffer | undefined> {
  if (!row.staged_path || !stagedInMemory(row.kind, row.size)) return undefined;
  return readIfHash(row.staged_path, row.size, row.content_sha256);
}

/** The bytes to upload for a row staged in memory mode (see above); throws EnrollInputError when gone. */
export async function loadStaged(row: OutboxRow, originalPath: string): Promise<Buffer> {
  const staged = await readIfHash(row.staged_path!, row.size, row.content_sha256);
  if (staged) return staged;
  const st = await stat(originalPath).catch(() => undefined);
  const original = st && st.size === row.source_size && Math.floor(st.mtimeMs) === row.source_mtime_ms
    ? await readIfHash(originalPath, row.size, row.content_sha256)
    : undefined;
  if (!original) {
    throw new EnrollInputError('TA_ERR_STAGED_COPY_LOST', `the agent's copy of ${row.source_path} was lost (a power failure before it reached the disk, or the original was rewritten in place) and the original has changed or is gone since it was taken; drop the file again`);
  }
  // A fresh file, never through a link that may still name the original.
  await rm(row.staged_path!, { force: true });
  await writeFile(row.staged_path!, original, { mode: 0o600 });
  return original;
}
