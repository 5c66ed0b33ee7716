import { constants, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

// Opening a file someone else put there. open(2) on a FIFO for reading blocks until a writer
// comes (in libuv's thread pool: four such opens and every fs call of the process waits), and a
// name checked with lstat may be replaced by a FIFO before it is opened. O_NONBLOCK makes that
// open return at once (it changes nothing for regular files), and fstat on the handle tells what
// was really opened.

export class NotRegularFileError extends Error {
  readonly code = 'ENOTREG';
  constructor(readonly path: string, readonly what: string) {
    super(`${path} is ${what}, not a regular file`);
  }
}

/** What a non-regular file is, for messages: "a FIFO (named pipe)", "a socket", ... */
export function fileTypeOf(st: Pick<Stats, 'isFile' | 'isDirectory' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice' | 'isSymbolicLink'>): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/**
 * A file with more than one name: a hard link may make a file the operator cannot read look like
 * one they dropped (enroll.dir is a security boundary, confined-dirs.ts).
 */
export class HardLinkedFileError extends Error {
  readonly code = 'ENLINK';
  constructor(readonly path: string, readonly links: number) {
    super(`${path} has ${links} names (hard links), not one`);
  }
}

export interface OpenOptions {
  /** Refuse a symbolic link as the last component (NotRegularFileError 'a symbolic link'), instead of following it. */
  noFollow?: boolean;
  /** Refuse a file with more than one name (HardLinkedFileError). */
  oneName?: boolean;
}

/**
 * Opens `path` for reading without ever blocking, and only if it is a regular file (throws
 * NotRegularFileError otherwise). Returns the handle and its fstat. The checks are made on the
 * opened descriptor: what they pass is what is read.
 */
export async function openRegularFile(path: string, opts: OpenOptions = {}): Promise<{ fh: FileHandle; st: Stats }> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | (opts.noFollow ? constants.O_NOFOLLOW : 0)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ELOOP' && opts.noFollow) throw new NotRegularFileError(path, 'a symbolic link');
    throw err;
  });
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new NotRegularFileError(path, fileTypeOf(st));
    if (opts.oneName && st.nlink > 1) throw new HardLinkedFileError(path, st.nlink);
    return { fh, st };
  } catch (err) {
    await fh.close();
    throw err;
  }
}
