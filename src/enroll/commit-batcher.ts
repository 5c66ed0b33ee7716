import { open, type FileHandle } from 'node:fs/promises';
import type { Db } from '../db/database.js';
import { walPathOf } from '../db/wal-sync.js';
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
// resolves only after an fdatasync of the WAL file, run on the libuv pool: the same guarantee
// as FULL (the WAL is appended in order, so one sync covers every commit before it, and a
// checkpoint in NORMAL mode syncs the WAL before copying it), without stopping the event loop,
// and one sync serves every durable change that arrived while the previous one ran (group
// commit). Without a WAL file (':memory:', another journal mode) commits stay FULL.

export type Commit = <T>(fn: () => T, opts?: { durable?: boolean }) => Promise<T>;

/** The batcher; `drain()` resolves once every queued change is committed (and synced when durable). */
export type CommitBatcher = Commit & { drain(): Promise<void> };

interface Job {
  fn: () => unknown;
  durable: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

export function createCommitBatcher(db: Db): CommitBatcher {
  let queue: Job[] = [];
  /** Changes queued and not yet settled, for drain(): the daemon closes the database after stop(). */
  let outstanding = 0;
  const drained: (() => void)[] = [];
  let scheduled = false;
  const walPath = walPathOf(db);
  /** Committed durable batches waiting for the next WAL sync. */
  let unsynced: Waiter[] = [];
  let syncing = false;
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

  // The WAL file stays open between syncs (an open and a close were two more thread-pool trips
  // per sync). It is the same file as long as this connection is open: SQLite removes or replaces
  // it only when the last connection closes, and the daemon drains this batcher first.
  let walFh: Promise<FileHandle> | undefined;
  /** The latest WAL sync, settled either way. */
  let lastSync: Promise<void> = Promise.resolve();

  async function syncWal(path: string): Promise<void> {
    walFh ??= open(path, 'r');
    try {
      await (await walFh).datasync();
    } catch (err) {
      await closeWal();
      throw err;
    }
  }

  async function closeWal(): Promise<void> {
    const fh = walFh;
    walFh = undefined;
    await fh?.then((h) => h.close()).catch(() => undefined);
  }

  /** One sync at a time; what commits while it runs waits for the next one (it may not be covered). */
  function pumpSync(path: string): void {
    if (syncing || unsynced.length === 0) return;
    syncing = true;
    const waiters = unsynced;
    unsynced = [];
    const sync = syncWal(path);
    lastSync = sync.catch(() => undefined);
    sync.then(
      () => {
        for (const w of waiters) w.resolve();
      },
      (err: unknown) => {
        for (const w of waiters) w.reject(err);
      },
    ).finally(() => {
      syncing = false;
      // What was queued during the sync (see flush): one transaction now, and the next sync.
      if (queue.length > 0 && !scheduled) flush();
      pumpSync(path);
    });
  }

  function flush(): void {
    scheduled = false;
    // While the WAL is being synced, changes wait for the sync to end and commit together then:
    // one transaction (its locks, WAL frames and pragmas) instead of several. A durable one loses
    // nothing by it (it waits for the sync after the running one either way); any other waits
    // at most one sync. In a burst this took the transactions from about 0.9 per file to 0.6.
    if (syncing) return;
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
    unsynced.push({
      resolve: () => settle((j) => j.durable),
      reject: (err) => {
        for (const job of batch) if (job.durable) job.reject(err);
      },
    });
    pumpSync(walPath);
  }

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
    if (!scheduled && !syncing) {
      scheduled = true;
      setImmediate(flush);
    }
  })) as CommitBatcher;
  commit.drain = async () => {
    if (outstanding > 0) await new Promise<void>((r) => drained.push(r));
    // Before the database closes (and SQLite removes the WAL file); a later sync opens it again.
    await lastSync;
    if (!syncing) await closeWal();
  };
  return commit;
}
