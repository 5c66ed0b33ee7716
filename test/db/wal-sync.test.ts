import { describe, expect, it } from 'vitest';
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.js';
import { createDurableCommit, walPathOf } from '../../src/db/wal-sync.js';
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
    const commit = createDurableCommit(db);
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
    const commit = createDurableCommit(db);
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
    const commit = createDurableCommit(db);
    await commit(() => db.prepare('INSERT INTO t (x) VALUES (1)').run()).synced;
    expect(walPathOf(db)).toBe(`${path}-wal`);
    // The WAL file gone from under the connection (SQLite keeps its own descriptor): the sync
    // cannot vouch for the commit, and its promise rejects with the reason.
    unlinkSync(`${path}-wal`);
    const { synced } = commit(() => db.prepare('INSERT INTO t (x) VALUES (2)').run());
    await expect(synced).rejects.toMatchObject({ code: 'ENOENT' });
    db.close();
  });

  it('commits FULL, with nothing left to wait for, on a database without a WAL file', async () => {
    const db = openDatabase({ path: ':memory:', migrations: [{ version: 1, name: 't', sql: 'CREATE TABLE t (x INTEGER);' }] });
    expect(walPathOf(db)).toBeUndefined();
    const { result, synced } = createDurableCommit(db)(() => db.prepare('INSERT INTO t (x) VALUES (3)').run().changes);
    expect(result).toBe(1);
    await expect(synced).resolves.toBeUndefined();
    expect(db.prepare('SELECT x FROM t').pluck().all()).toEqual([3]);
    db.close();
  });
});
