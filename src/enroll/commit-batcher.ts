import type { Db } from '../db/database.js';
import type { WalSyncer } from '../db/wal-sync.js';
import { AbortedError } from '../errors.js';

// Every state change of the outbox goes through here. Changes queued in the same turn of the event
// loop share one transaction (each in its own savepoint, so one that throws is rolled back alone).
//
// Durability: only two kinds of change must be on disk before the agent acts on them: "about to
// send" (the reconciliation after a crash depends on it) and "result recorded" before the original
// leaves the inbox. Every other change can be lost on power failure without losing a file or
// sending it twice (the original is still in the inbox, a lost step is redone or reconciled).
//
// agent.db runs with synchronous=FULL: an fsync of the WAL inside every commit, ~2-3 ms that
// block the event loop (better-sqlite3 is synchronous), once per upload. So the outbox commits
// with synchronous=NORMAL (the WAL is written, not synced) and a durable change's promise
// resolves only after the connection's WAL syncer (db/wal-sync.ts) has synced the WAL on the
// libuv pool: the same guarantee as FULL, without stopping the event loop, and one sync serves
// every durable change (the face cache's commits included) that arrived while the previous one
// ran (group commit). Without a WAL file (':memory:', another journal mode) commits stay FULL.

export type Commit = <T>(fn: () => T, opts?: { durable?: boolean }) => Promise<T>;

/**
 * The batcher; `drain()` resolves once every queued change is committed (and synced when durable).
 * The syncer is the connection's, shared (its owner closes it after the drain).
 */
export type CommitBatcher = Commit & { drain(): Promise<void> };

interface Job {
  fn: () => unknown;
  durable: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export function createCommitBatcher(db: Db, syncer: WalSyncer): CommitBatcher {
  let queue: Job[] = [];
  /** Changes queued and not yet settled, for drain(): the daemon closes the database after stop(). */
  let outstanding = 0;
  const drained: (() => void)[] = [];
  let scheduled = false;
  const walPath = syncer.wal();
  // Built once: db.transaction() and db.pragma() each build a wrapper or prepare a statement per
  // call, which was a measurable share of the CPU per upload. Inside the outer (IMMEDIATE)
  // transaction, `savepoint` runs each job in its own savepoint, as db.transaction(fn)() would.
  const savepoint = db.transaction((fn: () => unknown) => fn());
  const batchTx = db.transaction((jobs: Job[], outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[]) => {
    // A lone job (most batches outside a burst's peak) needs no savepoint, two statements fewer:
    // if it throws, the whole transaction rolled back is its alone, and flush() rejects it.
    if (jobs.length === 1) {
      outcomes.push({ ok: true, value: jobs[0]!.fn() });
      return;
    }
    for (const job of jobs) {
      try {
        outcomes.push({ ok: true, value: savepoint(job.fn) });
      } catch (err) {
        outcomes.push({ ok: false, err });
      }
    }
  });
  const syncNormal = db.prepare('PRAGMA synchronous = NORMAL');
  const syncFull = db.prepare('PRAGMA synchronous = FULL');

  function flush(): void {
    scheduled = false;
    // While the WAL is being synced, changes wait for the sync to end and commit together then:
    // one transaction (its locks, WAL frames and pragmas) instead of several. A durable one loses
    // nothing by it (it waits for the sync after the running one either way); any other waits
    // at most one sync. In a burst this took the transactions from about 0.9 per file to 0.6.
    if (syncer.busy()) return;
    const batch = queue;
    queue = [];
    if (!db.open) {
      // A change that arrives after the database was closed must fail its caller, not throw out
      // of this callback (which would end the process in the middle of a clean shutdown).
      for (const job of batch) job.reject(new AbortedError('the outbox database is closed: the agent is stopping'));
      return;
    }
    const durable = batch.some((j) => j.durable);
    const relaxed = walPath !== undefined || !durable;
    const outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[] = [];
    // The pragma is per connection and applies to the next commit; JS runs this block alone, so
    // no other component's commit can see the relaxed setting.
    if (relaxed) syncNormal.run();
    try {
      // IMMEDIATE, as inTransaction() does: the write lock at once, no upgrade deadlocks.
      batchTx.immediate(batch, outcomes);
    } catch (err) {
      for (const job of batch) job.reject(err);
      return;
    } finally {
      if (relaxed) syncFull.run();
    }
    const settle = (only: (j: Job) => boolean) => batch.forEach((job, i) => {
      if (!only(job)) return;
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.err);
    });
    if (!durable || walPath === undefined) {
      settle(() => true);
      return;
    }
    settle((j) => !j.durable);
    syncer.sync().then(
      () => settle((j) => j.durable),
      (err: unknown) => {
        for (const job of batch) if (job.durable) job.reject(err);
      },
    );
  }
  // What was queued during a sync (see flush): one transaction now, covered by the next sync.
  syncer.onSettled(() => {
    if (queue.length > 0 && !scheduled) flush();
  });

  function settled(): void {
    outstanding -= 1;
    if (outstanding === 0) for (const d of drained.splice(0)) d();
  }

  const commit = (<T>(fn: () => T, opts: { durable?: boolean } = {}) => new Promise<T>((resolve, reject) => {
    outstanding += 1;
    queue.push({
      fn,
      durable: opts.durable ?? false,
      resolve: (v: unknown) => { settled(); resolve(v as T); },
      reject: (err: unknown) => { settled(); reject(err); },
    });
    if (!scheduled && !syncer.busy()) {
      scheduled = true;
      setImmediate(flush);
    }
  })) as CommitBatcher;
  commit.drain = async () => {
    if (outstanding > 0) await new Promise<void>((r) => drained.push(r));
  };
  return commit;
}
