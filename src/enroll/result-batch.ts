import { rename, rm } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log/logger.js';
import { makeDurable } from '../faces/durability.js';
import { tempPathFor } from '../util/fs-atomic.js';
import { removeStateFile } from '../util/state-fs.js';
import type { Commit } from './commit-batcher.js';
import type { DirSync } from './dir-sync.js';
import type { EnrollFs } from './enroll-fs.js';
import type { Layout } from './layout.js';
import { companionRel, toRel } from './layout.js';
import { createConfinedDirs, sharedDirs, splitRel, type ConfinedDirs, type DirRef } from './confined-dirs.js';
import type { OutboxStore } from './outbox-store.js';
import { parseMeta } from './outbox-store.js';
import { resultPathFor } from './result-files.js';
import { doneFileOf, errorFileOf, openFolders, placeOriginal, type Placer } from './results.js';
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
  /** The result's temp file and final name inside `dir` (`/proc/self/fd/N/...`). */
  tmp: string;
  final: string;
  resultFile: string;
  dest: string;
  /** The destination folder, held open until the result is in place (confined-dirs.ts). */
  dir: DirRef;
}

/** Moves the original and writes the result's temp file; the caller makes it durable. */
async function prepare(layout: Layout, fs: EnrollFs, dirs: ConfinedDirs, row: OutboxRow, target: string): Promise<Pending> {
  const failed = row.state === 'failed';
  const state = failed ? 'failed' : 'done';
  const dest = layout.placed(row.kind, state, target);
  const resultFile = resultPathFor(layout, row.kind, state, target);
  const destRel = splitRel(toRel(layout.root, dest)!);
  const { src, dest: dir } = await openFolders(dirs, row.source_path, destRel.dir);
  try {
    await placeOriginal(src ? `${src.path}/${splitRel(row.source_path).base}` : undefined, row, `${dir.path}/${destRel.base}`, fs);
    const companion = parseMeta(row).companion;
    if (companion && src) await rename(`${src.path}/${splitRel(companion).base}`, `${dir.path}/${splitRel(companionRel(target)).base}`).catch(() => undefined);
    const placed = { ...row, final_path: target };
    const body = `${JSON.stringify(failed ? errorFileOf(placed) : doneFileOf(placed), null, 2)}\n`;
    const final = `${dir.path}/${basename(resultFile)}`;
    const tmp = tempPathFor(final);
    await fs.writeNew(tmp, body, 0o644);
    return { row, tmp, final, resultFile, dest, dir };
  } catch (err) {
    await dirs.close(dir).catch(() => undefined);
    throw err;
  } finally {
    if (src) await dirs.close(src).catch(() => undefined);
  }
}

/**
 * Finalizes rows that are done or failed and have their final_path (not knowledge). Returns the
 * rows finished, and the errors of those that were not (they stay unfinalized: a rescan retries).
 */
export async function finalizeRows(
  deps: { layout: Layout; store: OutboxStore; commit: Commit; placer: Placer; syncDir: DirSync; logger: Logger; fs: EnrollFs },
  rows: OutboxRow[],
): Promise<{ finished: Finished[]; failed: Map<number, unknown> }> {
  const { layout } = deps;
  const failed = new Map<number, unknown>();
  // Each folder walked once for the whole batch (its descriptors held until the results are in place).
  const dirs = sharedDirs(createConfinedDirs(layout.root, () => deps.fs.onLoop));
  try {
    const settled = await Promise.allSettled(rows.map((row) => prepare(layout, deps.fs, dirs, row, row.final_path!)));
    const pending: Pending[] = [];
    settled.forEach((s, i) => {
      if (s.status === 'fulfilled') pending.push(s.value);
      else failed.set(rows[i]!.id, s.reason);
    });
    if (pending.length === 0) return { finished: [], failed };
    return await finish(deps, pending, failed);
  } finally {
    await dirs.release();
  }
}

async function finish(
  deps: { layout: Layout; store: OutboxStore; commit: Commit; placer: Placer; syncDir: DirSync; logger: Logger; fs: EnrollFs },
  pending: Pending[],
  failed: Map<number, unknown>,
): Promise<{ finished: Finished[]; failed: Map<number, unknown> }> {
  const { layout, store, commit, placer, syncDir } = deps;
  try {
    // Not cut short by a stop: the daemon waits for the batch, and the sync has its own timeout.
    await makeDurable(layout.root, pending.map((p) => p.tmp), new AbortController().signal, deps.logger);
    await Promise.all(pending.map((p) => deps.fs.rename(p.tmp, p.final)));
    // The result renames, and the originals' (into the same folders), made durable before the rows say so.
    // Each folder once, through the descriptor held (its name may lead elsewhere by now).
    const folders = new Map<string, string>();
    for (const p of pending) if (!folders.has(dirname(p.resultFile))) folders.set(dirname(p.resultFile), p.dir.path);
    await Promise.all([...folders.values()].map((d) => syncDir(d)));
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
