import type { Db } from '../db/database.js';
import { inTransaction } from '../db/database.js';

// Every state change of the outbox goes through here. Changes queued in the same turn of the event
// loop share one transaction (each in its own savepoint, so one that throws is rolled back alone).
//
// Durability: agent.db runs with synchronous=FULL (an fsync per commit, ~3 ms on the event loop).
// Only two kinds of change must be on disk before the agent acts on them: "about to send" (the
// reconciliation after a crash depends on it) and "result recorded" before the original leaves
// the inbox. Every other change can be lost on power failure without losing a file or sending it
// twice (the original is still in the inbox, a lost step is redone or reconciled), so those
// batches commit with synchronous=NORMAL; the next FULL commit makes them durable too (the WAL
// is written in order). A change's promise resolves once it is committed.

export type Commit = <T>(fn: () => T, opts?: { durable?: boolean }) => Promise<T>;

interface Job {
  fn: () => unknown;
  durable: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export function createCommitBatcher(db: Db): Commit {
  let queue: Job[] = [];
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const batch = queue;
    queue = [];
    const durable = batch.some((j) => j.durable);
    const outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[] = [];
    // The pragma is per connection and applies to the next commit; JS runs this block alone, so
    // no other component's commit can see the relaxed setting.
    if (!durable) db.pragma('synchronous = NORMAL');
    try {
      inTransaction(db, () => {
        for (const job of batch) {
          try {
            outcomes.push({ ok: true, value: db.transaction(job.fn)() });
          } catch (err) {
            outcomes.push({ ok: false, err });
          }
        }
      });
    } catch (err) {
      for (const job of batch) job.reject(err);
      return;
    } finally {
      if (!durable) db.pragma('synchronous = FULL');
    }
    batch.forEach((job, i) => {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.err);
    });
  }

  return <T>(fn: () => T, opts: { durable?: boolean } = {}) => new Promise<T>((resolve, reject) => {
    queue.push({ fn, durable: opts.durable ?? false, resolve: resolve as (v: unknown) => void, reject });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  });
}
