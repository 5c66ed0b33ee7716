import { rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../log/logger.js';
import { makeDurable } from '../faces/durability.js';
import { tempPathFor } from '../util/fs-atomic.js';
import { removeStateFile } from '../util/state-fs.js';
import type { Commit } from './commit-batcher.js';
import type { DirSync } from './dir-sync.js';
import type { EnrollFs } from './enroll-fs.js';
import type { Layout } from './layout.js';
import { companionRel, mkdirLikeRoot } from './layout.js';
import type { OutboxStore } from './outbox-store.js';
import { parseMeta } from './outbox-store.js';
import { resultPathFor } from './result-files.js';
import { doneFileOf, errorFileOf, placeOriginal, type Placer } from './results.js';
import type { OutboxRow } from './types.js';

// The end of many files at once (results.ts finalizeRow, as a group commit): a burst finishes
// dozens of files per second, and an fsync per result file was a journal commit each. Here every
// original of the batch is moved and every result written to a temp name first; then one sync
// makes all the temps durable (one syncfs from 32 on, durability.ts), they are renamed into place,
// each folder is fsynced once, and one transaction marks the rows finalized. Readers still only
// ever see whole result files, and a row is finalized only once its result is durable: a crash
// anywhere leaves it unfinalized, and the next start finishes it (every step skips what is done).

export interface Finished {
  row: OutboxRow;
  resultFile: string;
}

interface Pending {
  row: OutboxRow;
  tmp: string;
  resultFile: string;
  dest: string;
}

/** Moves the original and writes the result's temp file; the caller makes it durable. */
async function prepare(layout: Layout, fs: EnrollFs, row: OutboxRow, target: string, dirs: Map<string, Promise<void>>): Promise<Pending> {
  const failed = row.state === 'failed';
  const state = failed ? 'failed' : 'done';
  const dest = layout.placed(row.kind, state, target);
  const dir = dirname(dest);
  // One mkdir per folder and batch, not per file.
  let made = dirs.get(dir);
  if (!made) {
    made = mkdirLikeRoot(layout.root, dir);
    dirs.set(dir, made);
  }
  await made;
  await placeOriginal(layout.abs(row.source_path), row, dest, fs);
  const companion = parseMeta(row).companion;
  if (companion) await rename(layout.abs(companion), layout.placed(row.kind, state, companionRel(target))).catch(() => undefined);
  const placed = { ...row, final_path: target };
  const body = `${JSON.stringify(failed ? errorFileOf(placed) : doneFileOf(placed), null, 2)}\n`;
  const resultFile = resultPathFor(layout, row.kind, state, target);
  const tmp = tempPathFor(resultFile);
  await fs.writeNew(tmp, body, 0o644);
  return { row, tmp, resultFile, dest };
}

/**
 * Finalizes rows that are done or failed and have their final_path (not knowledge). Returns the
 * rows finished, and the errors of those that were not (they stay unfinalized: a rescan retries).
 */
export async function finalizeRows(
  deps: { layout: Layout; store: OutboxStore; commit: Commit; placer: Placer; syncDir: DirSync; logger: Logger; fs: EnrollFs },
  rows: OutboxRow[],
): Promise<{ finished: Finished[]; failed: Map<number, unknown> }> {
  const { layout, store, commit, placer, syncDir } = deps;
  const failed = new Map<number, unknown>();
  const dirs = new Map<string, Promise<void>>();
  const settled = await Promise.allSettled(rows.map((row) => prepare(layout, deps.fs, row, row.final_path!, dirs)));
  const pending: Pending[] = [];
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') pending.push(s.value);
    else failed.set(rows[i]!.id, s.reason);
  });
  if (pending.length === 0) return { finished: [], failed };
  try {
    // Not cut short by a stop: the daemon waits for the batch, and the sync has its own timeout.
    await makeDurable(layout.root, pending.map((p) => p.tmp), new AbortController().signal, deps.logger);
    await Promise.all(pending.map((p) => deps.fs.rename(p.tmp, p.resultFile)));
    // The result renames, and the originals' (into the same folders), made durable before the rows say so.
    await Promise.all([...new Set(pending.map((p) => dirname(p.resultFile)))].map((d) => syncDir(d)));
  } catch (err) {
    await Promise.all(pending.map((p) => rm(p.tmp, { force: true })));
    for (const p of pending) failed.set(p.row.id, err);
    return { finished: [], failed };
  }
  for (const p of pending) placer.release(p.dest);
  await commit(() => {
    for (const p of pending) store.finalize(p.row.id);
  });
  // Staged copies are under state_dir: removed on the event loop (util/state-fs.ts).
  for (const p of pending) if (p.row.staged_path) removeStateFile(p.row.staged_path);
  return { finished: pending.map((p) => ({ row: p.row, resultFile: p.resultFile })), failed };
}
