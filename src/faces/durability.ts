import { execFile } from 'node:child_process';
import { open } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { runPool } from './image-download.js';

// New images must be on disk before the rename that publishes them (and before the rows and the
// index that name them). A few files get an fdatasync each (on libuv's pool), and the caller
// fsyncs their folder after its renames. A large batch is made durable with one syncfs(2) of the
// cache's file system instead: coreutils' `sync --file-system` (Node has no binding), which also
// makes every rename and file creation in the folder before it durable. One fdatasync per file
// costs a journal commit each (docs/design.md, "Durability").

const run = promisify(execFile);
const SYNCFS_TIMEOUT_MS = 300_000;

/** One syncfs of `dir`'s file system, by a fork of coreutils' `sync`. */
function syncfs(dir: string, signal: AbortSignal): Promise<void> {
  return run('sync', ['--file-system', dir], { timeout: SYNCFS_TIMEOUT_MS, signal }).then(() => undefined);
}

/** From this many new files on, one syncfs (a fork of `sync`) is cheaper than a fdatasync each. */
export const SYNCFS_THRESHOLD = 32;
/** Whether `count` new files are made durable by one syncfs rather than a fdatasync each. */
export function syncfsPays(count: number): boolean {
  return count >= SYNCFS_THRESHOLD;
}
const FDATASYNC_CONCURRENCY = 4; // the libuv thread pool's default size
/**
 * Bytes of new images between two early syncfs calls (about 270 face images of 30 KB): what is
 * left for the syncfs before the commit, which waits on it (8 MB: 0.5 s or more on an SD card).
 */
export const WRITEBACK_EVERY_BYTES = 8 * 1024 * 1024;

/**
 * Early syncfs calls while a large pass downloads, one at a time, each after WRITEBACK_EVERY_BYTES
 * more: the disk writes while the network brings more, and the syncfs before the commit (which
 * alone makes the pass durable) finds little left to write, instead of a whole first sync's
 * images held in the page cache until that last call. Costs one fork of `sync` each.
 */
export function createWriteback(dir: string, signal: AbortSignal, logger: Logger, everyBytes = WRITEBACK_EVERY_BYTES) {
  let since = 0;
  let running: Promise<void> | undefined;
  return {
    wrote(bytes: number): void {
      since += bytes;
      if (since < everyBytes || running || signal.aborted) return;
      since = 0;
      running = syncfs(dir, signal).then(() => {}, (err: unknown) => {
        if (!signal.aborted) logger.debug({ err: (err as Error).message }, 'early syncfs of the face cache failed; the one before the commit still runs');
      }).finally(() => {
        running = undefined;
      });
    },
    /** Waits for the running call, if any (before the final syncfs, or when the pass fails). */
    async settle(): Promise<void> {
      await running;
    },
  };
}

/**
 * Makes `files` durable; says how: 'syncfs' also made every rename and file creation in the cache
 * before the call durable (no folder fsync needed for them), 'each' or 'none' did not.
 */
export async function makeDurable(dir: string, files: readonly string[], signal: AbortSignal, logger: Logger): Promise<'syncfs' | 'each' | 'none'> {
  if (files.length === 0) return 'none';
  if (syncfsPays(files.length)) {
    try {
      await syncfs(dir, signal);
      return 'syncfs';
    } catch (err) {
      if (signal.aborted) throw err;
      logger.debug({ err: (err as Error).message }, 'syncfs failed; falling back to fdatasync per image');
    }
  }
  const { error } = await runPool(files, FDATASYNC_CONCURRENCY, signal, async (file) => {
    const fh = await open(file, 'r+');
    try {
      await fh.datasync();
    } finally {
      await fh.close();
    }
  });
  if (error !== undefined) throw error;
  return 'each';
}
