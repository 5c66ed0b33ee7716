import { inTransaction, inUnsyncedTransaction, type Db } from './database.js';
import { close, fdatasync, open } from 'node:fs';

// A commit whose fsync runs on libuv's pool instead of the event loop. agent.db runs with
// synchronous=FULL, so every commit fsyncs the WAL inside better-sqlite3's synchronous call: the
// event loop stands still for the whole fsync (on this VM's disks 1 to 3 ms, on an SD card tens of
// ms). Committed with synchronous=NORMAL (the WAL written, not synced) and then one fdatasync of
// the WAL on the pool, a change is as durable when the promise resolves as a FULL commit is when
// it returns: the WAL is appended in order, so the sync covers this commit and every one before
// it, and a checkpoint in NORMAL mode syncs the WAL before it copies it (the same argument as the
// outbox's commit batcher, enroll/commit-batcher.ts, which adds group commit to it).
//
// What another connection reads between the commit and the sync is what a power cut may still
// take back; a crash of the process (kill -9) takes nothing back, the WAL is in the page cache.

/** The WAL file of `db`, or undefined when it has none (':memory:', another journal mode). */
export function walPathOf(db: Db): string | undefined {
  if (db.memory) return undefined;
  return String(db.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal' ? `${db.name}-wal` : undefined;
}

export type DurableCommit = <T>(fn: () => T) => { result: T; synced: Promise<void> };

/**
 * Runs `fn` in an IMMEDIATE transaction, as inTransaction() does (a failure throws here, rolled
 * back), and gives its result with a promise that resolves once the change is on disk. Without a
 * WAL file the commit is FULL, as before, and the promise resolved already.
 */
export function createDurableCommit(db: Db): DurableCommit {
  // Asked at the first commit: stores made for a read (the CLI's) never pay for the pragma.
  let wal: string | null | undefined = null;
  return <T>(fn: () => T) => {
    if (wal === null) wal = walPathOf(db);
    if (wal === undefined) return { result: inTransaction(db, fn), synced: Promise.resolve() };
    const result = inUnsyncedTransaction(db, fn);
    return { result, synced: fdatasyncPath(wal) };
  };
}

/**
 * fdatasync of the file at `path`, on the pool. Opened and closed each time: no descriptor of the
 * WAL outlives the database. With node:fs's callbacks, not fs/promises: `faces list --cached`
 * loads the face store and is kept from loading fs/promises (test/cli/startup-modules.test.ts).
 */
function fdatasyncPath(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    open(path, 'r', (openErr, fd) => {
      if (openErr) return reject(openErr);
      fdatasync(fd, (syncErr) => close(fd, (closeErr) => {
        const err = syncErr ?? closeErr;
        if (err) reject(err);
        else resolve();
      }));
    });
  });
}
