import { execFile } from 'node:child_process';
import { open } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { runPool } from './image-download.js';

// New images must be on disk before the rename that publishes them (and before the rows and the
// index that name them). One fdatasync per file costs a journal commit each: on an SD card, or a
// busy VM disk (measured ~18 ms each), that dominates an initial sync of thousands of images. So a
// large batch is made durable with one syncfs(2) of the cache's filesystem (coreutils `sync -f`,
// Node has no binding); a small batch, or a system without `sync -f`, gets fdatasync per file.

const run = promisify(execFile);

/**
 * From this many new files on, one syncfs is cheaper than a fdatasync each. 256 was tried, to
 * spare the refresh syncs enrollment starts the fork of `sync` (~15-20 ms of CPU each): the
 * fdatasyncs then tied up the thread pool and cost the burst more CPU and time than the forks
 * (test/bench/enroll.mjs, runs alternated with the old code).
 */
export const SYNCFS_THRESHOLD = 32;
const FDATASYNC_CONCURRENCY = 4; // the libuv thread pool's default size

export async function makeDurable(dir: string, files: readonly string[], signal: AbortSignal, logger: Logger): Promise<void> {
  if (files.length === 0) return;
  if (files.length >= SYNCFS_THRESHOLD) {
    try {
      await run('sync', ['--file-system', dir], { timeout: 300_000, signal });
      return;
    } catch (err) {
      if (signal.aborted) throw err;
      logger.debug({ err: (err as Error).message }, "'sync --file-system' failed; falling back to fdatasync per image");
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
}
