import { execFile } from 'node:child_process';
import { open } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { runPool } from './image-download.js';
import type { SyncfsRunner } from '../util/syncfs.js';

// New images must be on disk before the rename that publishes them (and before the rows and the
// index that name them). One fdatasync per file costs a journal commit each: on an SD card, or a
// busy VM disk (measured ~18 ms each), that dominates an initial sync of thousands of images. So a
// large batch is made durable with one syncfs(2) of the cache's filesystem (coreutils `sync -f`,
// Node has no binding); a small batch, or a system without `sync -f`, gets fdatasync per file.

const run = promisify(execFile);
const SYNCFS_TIMEOUT_MS = 300_000;

/** One syncfs of `dir`'s file system: through the runner's helper when given (util/syncfs.ts), else a fork of `sync`. */
function syncfs(dir: string, signal: AbortSignal, runner: SyncfsRunner | undefined): Promise<void> {
  if (runner) return runner.run(dir, signal, SYNCFS_TIMEOUT_MS);
  return run('sync', ['--file-system', dir], { timeout: SYNCFS_TIMEOUT_MS, signal }).then(() => undefined);
}

/**
 * From this many new files on, one syncfs is cheaper than a fdatasync each. 256 was tried, to
 * spare the refresh syncs enrollment starts the fork of `sync` (~15-20 ms of CPU each): the
 * fdatasyncs then tied up the thread pool and cost the burst more CPU and time than the forks
 * (test/bench/enroll.mjs, runs alternated with the old code).
 */
export const SYNCFS_THRESHOLD = 32;
/**
 * The same through the runner's helper (util/syncfs.ts): from this many files on it is cheaper
 * than their fdatasyncs (three thread-pool trips and a journal commit each). Chosen when the
 * helper was a shell costing about 1 ms of CPU per call; perl's 0.15 ms (helper and daemon) would
 * pay from fewer files, but a syncfs also writes back whatever else is dirty on that file system
 * (on a Pi, often the root file system on its SD card), so small batches keep their own syncs.
 */
export const SYNCFS_HELPER_THRESHOLD = 8;
/** Whether `count` new files are made durable by one syncfs rather than a fdatasync each. */
export function syncfsPays(count: number, runner: SyncfsRunner | undefined): boolean {
  return count >= (runner ? SYNCFS_HELPER_THRESHOLD : SYNCFS_THRESHOLD);
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
 * alone makes the pass durable) finds little left to write. Without this, the page cache of a
 * machine with plenty of memory held all 300 MB of a 10,000-face first sync until that last call
 * (0.5 s here, seconds on an SD card). Costs one fork of `sync` each (~10 ms of CPU).
 */
export function createWriteback(dir: string, signal: AbortSignal, logger: Logger, everyBytes = WRITEBACK_EVERY_BYTES, runner?: SyncfsRunner) {
  let since = 0;
  let running: Promise<void> | undefined;
  return {
    wrote(bytes: number): void {
      since += bytes;
      if (since < everyBytes || running || signal.aborted) return;
      since = 0;
      running = syncfs(dir, signal, runner).then(() => {}, (err: unknown) => {
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
export async function makeDurable(dir: string, files: readonly string[], signal: AbortSignal, logger: Logger, runner?: SyncfsRunner): Promise<'syncfs' | 'each' | 'none'> {
  if (files.length === 0) return 'none';
  if (syncfsPays(files.length, runner)) {
    try {
      await syncfs(dir, signal, runner);
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
