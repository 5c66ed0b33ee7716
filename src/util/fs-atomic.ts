import { open, rename, rm, unlink } from 'node:fs/promises';
import { constants, createWriteStream } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { outputFileError } from '../errors.js';
import { makeDir } from './make-dir.js';

// Readers on the terminal (a face-recognition program, an operator's script) must never see a
// half-written file: everything they read is written to a temp name in the same folder, fsynced,
// then renamed over the final name, and the folder is fsynced so the rename survives power loss.

/** Bytes a temp name adds to the final name: `.` before, `.XXXXXXXX.tmp` after. */
const TEMP_EXTRA_BYTES = 14;
const NAME_MAX_BYTES = 255;

/**
 * 8 hex characters that tell temp files apart. Not a secret and not what keeps them apart from an
 * attacker (temp files are created in the agent's own folders, with O_EXCL where it matters), so
 * Math.random serves: crypto's randomBytes cost 5 to 8 µs per name, two or three names per
 * enrolled file.
 */
export function tempSuffix(): string {
  return Math.floor(Math.random() * 0x1_0000_0000).toString(16).padStart(8, '0');
}

export function tempPathFor(path: string): string {
  // A final name near NAME_MAX (255 bytes) must still get a temp name: cut it between characters.
  let base = basename(path);
  while (Buffer.byteLength(base, 'utf8') > NAME_MAX_BYTES - TEMP_EXTRA_BYTES) base = [...base].slice(0, -1).join('');
  return join(dirname(path), `.${base}.${tempSuffix()}.tmp`);
}

/** Removes a file, when it is there: one unlink (fs.rm looks first with an lstat, a second thread-pool trip). */
export async function removeFile(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** O_DIRECTORY: a FIFO put where the folder was is refused at once instead of blocking the open. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export interface AtomicWriteOptions {
  /** Makes the rename durable; a caller writing many files may share one folder fsync among them. */
  syncDir?: (dir: string) => Promise<void>;
  /** Skip creating the folder when the caller knows it exists (saves a system call per file). */
  dirExists?: boolean;
}

/**
 * Writes `data` to a temp name beside `path` (its folder must exist) and fsyncs it; returns that
 * name, for the caller to rename (commitTemp) or remove. Nothing is left behind when it fails.
 * `flag` 'wx' refuses a file already there under that name.
 */
export async function writeTempFile(path: string, data: string | Uint8Array, flag: 'w' | 'wx' = 'w'): Promise<string> {
  const tmp = tempPathFor(path);
  try {
    const fh = await open(tmp, flag, 0o644);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return tmp;
}

/** Writes `data` to `path` atomically (temp file + fsync + rename + dir fsync). */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  if (!options.dirExists) await makeDir(dirname(path));
  const tmp = await writeTempFile(path, data);
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await (options.syncDir ?? fsyncDir)(dirname(path));
}

/**
 * Streams `source` to a temp file next to `path`; returns the temp path and byte count once it is
 * fsynced. The caller validates the content, then calls `commitTemp` (or removes the temp file).
 */
export async function streamToTemp(path: string, source: Readable | AsyncIterable<Uint8Array>): Promise<{ tmp: string; bytes: number }> {
  await makeDir(dirname(path));
  const tmp = tempPathFor(path);
  let bytes = 0;
  let out: ReturnType<typeof createWriteStream> | undefined;
  try {
    out = createWriteStream(tmp, { mode: 0o644 });
    await pipeline(source, async function* (chunks: AsyncIterable<Uint8Array>) {
      for await (const chunk of chunks) {
        bytes += chunk.length;
        yield chunk;
      }
    }, out);
    const fh = await open(tmp, 'r+');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    return { tmp, bytes };
  } catch (err) {
    // A source that fails at once can beat the stream's open, which would then create the file
    // after the rm: remove it once the stream has closed.
    const stream = out;
    if (stream && !stream.closed) await new Promise<void>((resolve) => stream.once('close', () => resolve()));
    await rm(tmp, { force: true });
    throw err;
  }
}

export async function commitTemp(tmp: string, path: string, syncDir = true): Promise<void> {
  await rename(tmp, path);
  if (syncDir) await fsyncDir(dirname(path));
}

/**
 * Checks, before any request is sent, that a file the operator asked for can be created at `path`
 * (its folder is made when missing, as the write itself would). Throws OutputFileError.
 */
export async function ensureWritable(path: string): Promise<void> {
  try {
    await makeDir(dirname(path));
    const probe = tempPathFor(path);
    const fh = await open(probe, 'wx');
    await fh.close();
    await rm(probe, { force: true });
  } catch (err) {
    throw outputFileError(path, err);
  }
}
