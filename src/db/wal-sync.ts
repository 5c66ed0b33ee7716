import { inTransaction, inUnsyncedTransaction, type Db } from './database.js';
import { close, fdatasync, open } from 'node:fs';

// Commits whose fsync runs on libuv's pool instead of the event loop. agent.db runs with
// synchronous=FULL, so every commit fsyncs the WAL inside better-sqlite3's synchronous call: the
// event loop stands still for the whole fsync (tens of ms on an SD card). Committed with synchronous=NORMAL (the WAL written, not synced) and then an fdatasync of
// the WAL on the pool, a change is as durable when its sync resolves as a FULL commit is when it
// returns: the WAL is appended in order, so the sync covers this commit and every one before it,
// and a checkpoint in NORMAL mode syncs the WAL before it copies it.
//
// One syncer per connection (the daemon's, made at its composition root): the outbox's commit
// batcher and the face cache both ask it, and one fdatasync serves every commit made before it
// started, whoever made it (group commit).
//
// What another connection reads between a commit and its sync is what a power cut may still take
// back; a crash of the process (kill -9) takes nothing back, the WAL is in the page cache.

/** The WAL file of `db`, or undefined when it has none (':memory:', another journal mode). */
export function walPathOf(db: Db): string | undefined {
  if (db.memory) return undefined;
  return String(db.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal' ? `${db.name}-wal` : undefined;
}

export interface WalSyncer {
  /** agent.db's WAL file, or undefined: then commits stay FULL and there is nothing to sync. */
  wal(): string | undefined;
  /** Resolves once every commit made on the connection before this call is on disk. */
  sync(): Promise<void>;
  /** A sync is running: a commit made now is not covered by it, and waits for the next one. */
  busy(): boolean;
  /**
   * `fn` runs each time a sync has settled, before the next one starts: a committer holding back
   * while one ran (the commit batcher) commits then, and its sync is that next one.
   */
  onSettled(fn: () => void): void;
  /**
   * How long a sync takes here (ms, a moving average of the recent ones; 0 before the first): what
   * the outbox sizes its pipeline by (enroll/pipeline-depth.ts). This VM's disk flushes in 1 to 3
   * ms, an SD card in tens.
   */
  typicalMs(): number;
  /** Lets the WAL's descriptor go once the sync under way has settled; a later sync opens it again. */
  close(): Promise<void>;
}

/** The flush itself: node:fs's fdatasync, unless a test stands in a slower disk. */
export type Flush = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;

/** Weight of the latest sync in typicalMs(): a burst's first few syncs set it. */
const TYPICAL_WEIGHT = 0.25;

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

export function createWalSyncer(db: Db, flush: Flush = fdatasync): WalSyncer {
  // Asked at the first use: stores made for a read (the CLI's) never pay for the pragma.
  let walPath: string | null | undefined = null;
  // The WAL stays open between syncs (an open and a close are two more trips to the pool). It is
  // the same file as long as the connection is open: SQLite removes or replaces it only when the
  // last connection closes, and the daemon closes this syncer first.
  let fd: number | undefined;
  let waiting: Waiter[] = [];
  let running: Promise<void> | undefined;
  const settledListeners: (() => void)[] = [];
  let typical = 0;

  const wal = () => {
    if (walPath === null) walPath = walPathOf(db);
    return walPath;
  };

  /** node:fs's callbacks, not fs/promises: `faces list --cached` must not load it (test/cli/startup-modules.test.ts). */
  function syncOnce(path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const withFd = (err: NodeJS.ErrnoException | null, handle: number) => {
        if (err) return reject(err);
        fd = handle;
        flush(handle, (syncErr) => {
          if (!syncErr) return resolve();
          // A descriptor that failed is not trusted again: the next sync opens the file anew.
          fd = undefined;
          close(handle, () => reject(syncErr));
        });
      };
      if (fd !== undefined) withFd(null, fd);
      else open(path, 'r', withFd);
    });
  }

  /** One sync at a time; what commits while it runs waits for the next one (it may not be covered). */
  function pump(path: string): void {
    if (running || waiting.length === 0) return;
    const waiters = waiting;
    waiting = [];
    const t0 = performance.now();
    const sync = syncOnce(path);
    running = sync.then(
      () => {
        const ms = performance.now() - t0;
        typical = typical === 0 ? ms : typical + TYPICAL_WEIGHT * (ms - typical);
        for (const w of waiters) w.resolve();
      },
      (err: unknown) => { for (const w of waiters) w.reject(err); },
    ).finally(() => {
      running = undefined;
      // The next sync starts even if a listener throws: commits of other components wait for it.
      try {
        for (const fn of settledListeners) fn();
      } finally {
        pump(path);
      }
    });
  }

  return {
    wal,
    sync() {
      const path = wal();
      if (path === undefined) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject });
        pump(path);
      });
    },
    busy: () => running !== undefined,
    typicalMs: () => typical,
    onSettled(fn) {
      settledListeners.push(fn);
    },
    async close() {
      while (running) await running;
      const handle = fd;
      fd = undefined;
      if (handle !== undefined) await new Promise<void>((resolve) => close(handle, () => resolve()));
    },
  };
}

export type DurableCommit = <T>(fn: () => T) => { result: T; synced: Promise<void> };

/**
 * Runs `fn` in an IMMEDIATE transaction, as inTransaction() does (a failure throws here, rolled
 * back), and gives its result with a promise that resolves once the change is on disk, through
 * `syncer`. Without a WAL file the commit is FULL, as before, and the promise resolved already.
 */
export function createDurableCommit(db: Db, syncer: WalSyncer): DurableCommit {
  return <T>(fn: () => T) => {
    if (syncer.wal() === undefined) return { result: inTransaction(db, fn), synced: Promise.resolve() };
    const result = inUnsyncedTransaction(db, fn);
    return { result, synced: syncer.sync() };
  };
}
