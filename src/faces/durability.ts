import { open } from 'node:fs/promises';
import { runPool } from './image-download.js';

// New images must be on disk before the rename that publishes them (and before the rows and the
// index that name them): each file gets its fdatasync, on libuv's thread pool, and the caller
// fsyncs the folder once its renames are done (fsyncDir). Node has no binding for syncfs(2), and a
// helper process that calls it (by its syscall number, per CPU) saved about 18 ms per 1,000-file
// burst: not worth owning (docs/design.md, "Durability").

const FDATASYNC_CONCURRENCY = 4; // the libuv thread pool's default size

/** Makes `files` durable, one fdatasync each; says whether there were any. */
export async function makeDurable(files: readonly string[], signal: AbortSignal): Promise<'each' | 'none'> {
  if (files.length === 0) return 'none';
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
