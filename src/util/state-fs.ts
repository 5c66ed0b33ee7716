import { closeSync, constants, fstatSync, openSync, readSync, statSync, unlinkSync, type Stats } from 'node:fs';
import { NotRegularFileError, fileTypeOf } from './safe-open.js';

// Small, non-syncing calls on files under state_dir, made on the event loop instead of the libuv
// thread pool. A pool trip (fs/promises) costs about 40 µs of the daemon's CPU here, two thread
// wake-ups and an eventfd round, against 2 to 10 µs for the call itself; an enrollment burst made
// about 20 per file. Blocking is bounded the same way SQLite's is: better-sqlite3 writes and reads
// agent.db, in the same state_dir, on the event loop at every commit, so a state_dir that hangs
// stalls the daemon either way (the face cache's seed pass writes its images the same way,
// seed-pass.ts). Nothing here fsyncs (that stays on the pool), reads are capped
// (SYNC_READ_MAX), and nothing here ever touches enroll.dir (a share or a USB stick can hang): a
// staged hard link is there only when link(2) succeeded, which needs the same mount as staging.

/** Reads up to this size are made on the event loop: a cold read of it from an SD card is a few ms. */
export const SYNC_READ_MAX = 256 * 1024;

/** The file's stat, or undefined when it is missing (any other error too: the callers look again). */
export function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Removes a file when it is there (ENOENT is no error). */
export function removeStateFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * At most `max` bytes of `path` (one more than `expected` shows growth: the caller compares), with
 * its fstat before the read and after it (a file written meanwhile shows it there). Opened like
 * safe-open.ts's openRegularFile: O_NONBLOCK (a FIFO swapped in never blocks the open), and
 * nothing but a regular file is read (NotRegularFileError).
 */
export function readRegularFileSync(path: string, max: number, expected?: number): { st: Stats; bytes: Buffer; after: Stats } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NotRegularFileError(path, fileTypeOf(st));
    const buf = Buffer.allocUnsafe(max);
    let n = 0;
    while (n < max) {
      const got = readSync(fd, buf, n, max - n, n);
      if (got === 0) break;
      n += got;
      // A regular file's read comes up short only at its end (claim.ts's readAtMost says more).
      if (n === expected) break;
    }
    return { st, bytes: buf.subarray(0, n), after: fstatSync(fd) };
  } finally {
    closeSync(fd);
  }
}
