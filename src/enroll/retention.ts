import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Db } from '../db/database.js';
import { inTransaction } from '../db/database.js';
import type { Logger } from '../log/logger.js';

// What enrollment leaves behind over years of unattended running, and what of it may go.
//
// - Staged copies (state_dir/enroll-staging/): each is deleted when its row is finalized, and a
//   start removes the ones no row names. A copy that outlived both (an rm that failed, a claim
//   whose commit threw) is removed here once it is a day old: a claim commits its row moments
//   after the copy is written, so an unnamed copy that old belongs to nobody.
// - Outbox rows: the small hash + result of a done upload is what keeps "dropped again, never
//   sent again" true (claim.ts, doneByContent), so the first done row of each (kind, name,
//   content) is kept for good; its meta (a speaker's text, ids listed while reconciling) is no
//   longer read once finalized and is emptied when large. Rows that guarantee nothing go after
//   30 days, and beyond the newest 10,000 of them: failed rows (their NAME.error.json in failed/
//   stays with the operator), knowledge rows (knowledge_mirror holds the mirror's state), and
//   later done rows of content already uploaded (the first row answers for them).
// - done/ and failed/ in enroll.dir are the operator's (product.md): never touched here.
// `status` counts the rows kept, so its done/failed figures stop including what was pruned.

export interface OutboxRetentionLimits {
  maxAgeMs: number;
  maxPrunableRows: number;
  /** meta_json of kept done rows above this many bytes is emptied once they are old. */
  maxMetaBytes: number;
  orphanAgeMs: number;
  /** How often poke() actually runs (the rescan calls it every rescan_interval). */
  intervalMs: number;
  batch: number;
}

const DAY = 24 * 3600_000;

export const OUTBOX_RETENTION: Readonly<OutboxRetentionLimits> = {
  maxAgeMs: 30 * DAY,
  maxPrunableRows: 10_000,
  maxMetaBytes: 1024,
  orphanAgeMs: DAY,
  intervalMs: 3600_000,
  batch: 500,
};

export interface OutboxRetentionReport {
  rowsDeleted: number;
  metaEmptied: number;
  orphansRemoved: number;
}

export interface OutboxRetention {
  /** Runs the retention in the background when the last run is intervalMs old. */
  poke(): void;
  /** One run now (after the one in progress, if any). */
  run(now?: number): Promise<OutboxRetentionReport>;
  /** Resolves when no run is in progress. */
  idle(): Promise<void>;
}

// A finalized row that keeps no promise (see above). `o` is the row considered.
const PRUNABLE = `o.finalized = 1 AND (o.state = 'failed' OR o.kind = 'knowledge'
  OR (o.state = 'done' AND o.content_sha256 != '' AND EXISTS (SELECT 1 FROM outbox AS e WHERE e.kind = o.kind
    AND e.content_sha256 = o.content_sha256 AND e.name = o.name AND e.state = 'done' AND e.result_json IS NOT NULL AND e.id < o.id)))`;

export function createOutboxRetention(deps: { db: Db; staging: string; logger?: Logger | undefined; limits?: Partial<OutboxRetentionLimits> }): OutboxRetention {
  const { db, logger } = deps;
  const limits = { ...OUTBOX_RETENTION, ...deps.limits };
  const q = {
    deleteOld: db.prepare<[number, number]>(`DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox AS o WHERE ${PRUNABLE} AND o.updated_at < ? LIMIT ?)`),
    deleteOverCap: db.prepare<[number, number]>(`DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox AS o WHERE ${PRUNABLE} ORDER BY o.id DESC LIMIT ? OFFSET ?)`),
    emptyMeta: db.prepare<[number, number, number]>(`UPDATE outbox SET meta_json = '{}' WHERE id IN (SELECT id FROM outbox
      WHERE finalized = 1 AND state = 'done' AND length(meta_json) > ? AND updated_at < ? LIMIT ?)`),
    stagedPaths: db.prepare<[], { staged_path: string }>('SELECT staged_path FROM outbox WHERE staged_path IS NOT NULL'),
  };
  let lastRun = -Infinity; // performance.now(): a wall clock set back would stop the pruning for as long
  let running: Promise<OutboxRetentionReport> = Promise.resolve({ rowsDeleted: 0, metaEmptied: 0, orphansRemoved: 0 });

  /** Runs `stmt` in short transactions until it changes nothing, yielding between batches. */
  async function inBatches(step: () => number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = inTransaction(db, step);
      total += n;
      if (n < limits.batch) return total;
      await yieldToLoop();
    }
  }

  async function once(now: number): Promise<OutboxRetentionReport> {
    const report: OutboxRetentionReport = { rowsDeleted: 0, metaEmptied: 0, orphansRemoved: 0 };
    report.rowsDeleted += await inBatches(() => q.deleteOld.run(now - limits.maxAgeMs, limits.batch).changes);
    report.rowsDeleted += await inBatches(() => q.deleteOverCap.run(limits.batch, limits.maxPrunableRows).changes);
    report.metaEmptied = await inBatches(() => q.emptyMeta.run(limits.maxMetaBytes, now - limits.maxAgeMs, limits.batch).changes);
    // Read before listing the folder: a copy made after this read is young, so it is spared.
    const named = new Set(q.stagedPaths.all().map((r) => r.staged_path));
    let files: string[] = [];
    try {
      files = await readdir(deps.staging);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    for (const f of files) {
      const p = join(deps.staging, f);
      if (named.has(p)) continue;
      const st = await stat(p).catch(() => undefined);
      if (!st?.isFile() || now - st.mtimeMs < limits.orphanAgeMs) continue;
      await rm(p, { force: true });
      report.orphansRemoved++;
    }
    if (report.rowsDeleted + report.metaEmptied + report.orphansRemoved > 0) {
      logger?.info({ rows_deleted: report.rowsDeleted, meta_emptied: report.metaEmptied, orphans_removed: report.orphansRemoved }, 'old enrollment records pruned');
    }
    return report;
  }

  function run(now = Date.now()): Promise<OutboxRetentionReport> {
    lastRun = performance.now();
    const next = running.catch(() => undefined).then(() => once(now));
    running = next;
    return next;
  }

  return {
    poke() {
      if (performance.now() - lastRun < limits.intervalMs) return;
      run().catch((err: unknown) => logger?.warn({ err }, 'cannot prune old enrollment records; trying again in an hour'));
    },
    run,
    idle: () => running.then(() => undefined, () => undefined),
  };
}
