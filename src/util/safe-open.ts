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
 * Opens `path` for reading without ever blocking, and only if it is a regular file (throws
 * NotRegularFileError otherwise). Returns the handle and its fstat.
 */
export async function openRegularFile(path: string): Promise<{ fh: FileHandle; st: Stats }> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new NotRegularFileError(path, fileTypeOf(st));
    return { fh, st };
  } catch (err) {
    await fh.close();
    throw err;
  }
}
