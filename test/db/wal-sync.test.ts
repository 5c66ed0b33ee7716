import { describe, expect, it } from 'vitest';
import { readdirSync, readlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.js';
import { createDurableCommit, createWalSyncer, walPathOf } from '../../src/db/wal-sync.js';
import { slowFlush } from '../helpers/slow-flush.js';
import { tmpDir } from '../helpers/tmp.js';

// A real agent.db file in WAL mode, read back through a second connection as the CLI and the
// face-recognition program read it. That the fsync runs on libuv's pool rather than the event loop
// is not observable from here (no tracer in CI); the enrollment benchmark's strace shows it.

function fresh() {
  const path = join(tmpDir('ta-wal-sync-'), 'agent.db');
  const db = openDatabase({ path, migrations: [{ version: 1, name: 't', sql: 'CREATE TABLE t (x INTEGER);' }] });
  return { path, db };
}

describe('a durable commit with its sync on the pool', () => {
  it('is committed when it returns, resolves once synced, and leaves the connection at synchronous=FULL', async () => {
    const { path, db } = fresh();
    const commit = createDurableCommit(db, createWalSyncer(db));
    const { result, synced } = commit(() => db.prepare('INSERT INTO t (x) VALUES (7)').run().changes);
    expect(result).toBe(1);
    // Before the sync: another connection already reads the row, and the next commit is FULL again.
    const reader = openDatabase({ path, readonly: true });
    expect(reader.prepare('SELECT x FROM t').pluck().all()).toEqual([7]);
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    await expect(synced).resolves.toBeUndefined();
    reader.close();
    db.close();
  });

  it('throws a failed transaction at once, rolled back, with nothing to sync', () => {
    const { db } = fresh();
    const commit = createDurableCommit(db, createWalSyncer(db));
    expect(() => commit(() => {
      db.prepare('INSERT INTO t (x) VALUES (1)').run();
      throw new Error('no room');
    })).toThrow('no room');
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(0);
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    db.close();
  });

  it('says so when the WAL cannot be synced, instead of resolving', async () => {
    const { path, db } = fresh();
    const commit = createDurableCommit(db, createWalSyncer(db));
    expect(walPathOf(db)).toBe(`${path}-wal`);
    // The WAL file gone from under the connection before its first sync (SQLite keeps its own
    // descriptor): the sync cannot vouch for the commit, and its promise rejects with the reason.
    unlinkSync(`${path}-wal`);
    const { synced } = commit(() => db.prepare('INSERT INTO t (x) VALUES (2)').run());
    await expect(synced).rejects.toMatchObject({ code: 'ENOENT' });
    db.close();
  });

  it('gives every commit made while a sync runs to one more sync, and lets the WAL go on close', async () => {
    const { path, db } = fresh();
    const syncer = createWalSyncer(db);
    const commit = createDurableCommit(db, syncer);
    let settled = 0;
    syncer.onSettled(() => { settled++; });
    const first = commit(() => db.prepare('INSERT INTO t (x) VALUES (1)').run());
    expect(syncer.busy()).toBe(true);
    const more = [2, 3, 4].map((x) => commit(() => db.prepare('INSERT INTO t (x) VALUES (?)').run(x)).synced);
    await Promise.all([first.synced, ...more]);
    expect(settled).toBe(2);
    expect(syncer.busy()).toBe(false);
    const fds = () => readdirSync('/proc/self/fd').filter((fd) => {
      try { return readlinkSync(`/proc/self/fd/${fd}`) === `${path}-wal`; } catch { return false; }
    }).length;
    const withSyncer = fds(); // SQLite's own descriptor and the syncer's
    await syncer.close();
    expect(fds()).toBe(withSyncer - 1);
    // A sync after close opens the file again.
    await commit(() => db.prepare('INSERT INTO t (x) VALUES (5)').run()).synced;
    expect(fds()).toBe(withSyncer);
    await syncer.close();
    db.close();
  });

  it('knows how long its syncs take: the flush of a slow disk shows in typicalMs', async () => {
    const { db } = fresh();
    // Faked: a flush of tens of ms (an SD card) cannot exist on this VM's disk (slow-flush.ts).
    const slow = createWalSyncer(db, slowFlush(30));
    const commit = createDurableCommit(db, slow);
    expect(slow.typicalMs()).toBe(0);
    for (let x = 0; x < 4; x++) await commit(() => db.prepare('INSERT INTO t (x) VALUES (?)').run(x)).synced;
    expect(slow.typicalMs()).toBeGreaterThanOrEqual(29);
    expect(slow.typicalMs()).toBeLessThan(1_000);
    await slow.close();
    db.close();
  });

  it('commits FULL, with nothing left to wait for, on a database without a WAL file', async () => {
    const db = openDatabase({ path: ':memory:', migrations: [{ version: 1, name: 't', sql: 'CREATE TABLE t (x INTEGER);' }] });
    expect(walPathOf(db)).toBeUndefined();
    const { result, synced } = createDurableCommit(db, createWalSyncer(db))(() => db.prepare('INSERT INTO t (x) VALUES (3)').run().changes);
    expect(result).toBe(1);
    await expect(synced).resolves.toBeUndefined();
    expect(db.prepare('SELECT x FROM t').pluck().all()).toEqual([3]);
    db.close();
  });
});
