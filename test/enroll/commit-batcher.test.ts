import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { openDatabase } from '../../src/db/database.js';
import { createCommitBatcher } from '../../src/enroll/commit-batcher.js';
import { createDurableCommit, createWalSyncer } from '../../src/db/wal-sync.js';
import { tmpDir } from '../helpers/tmp.js';

const TABLE = [{ version: 1, name: 't', sql: 'CREATE TABLE t (x INTEGER UNIQUE);' }];

/**
 * Syncs run on libuv's pool (4 threads in this test's own process): opening a FIFO with no writer
 * holds a pool thread, so with all four held a sync stays in flight until they are let go.
 * Nothing else of the agent runs in this process.
 */
function holdPool(dir: string) {
  const fifos = [0, 1, 2, 3].map((i) => join(dir, `hold-${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const held = fifos.map((f) => open(f, 'r'));
  return {
    async release() {
      for (const f of fifos) writeFileSync(f, ''); // not through the pool: its threads are all held
      await Promise.all(held.map(async (h) => (await h).close()));
    },
  };
}

describe('the outbox commit batcher', () => {
  it('commits changes queued together, each in its own savepoint, and drain() waits for durable ones', async () => {
    const db = openDatabase({ path: join(tmpDir(), 'agent.db'), migrations: TABLE });
    const commit = createCommitBatcher(db, createWalSyncer(db));
    const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
    const results = Promise.allSettled([
      commit(() => insert.run(1).changes, { durable: true }),
      commit(() => insert.run(1).changes), // violates UNIQUE: rolled back alone
      commit(() => insert.run(2).changes),
    ]);
    await commit.drain();
    expect((await results).map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(db.prepare('SELECT x FROM t ORDER BY x').pluck().all()).toEqual([1, 2]);
    db.close();
  });

  it('a change alone in its batch that throws half-way leaves none of its writes, and the next change commits', async () => {
    const db = openDatabase({ path: join(tmpDir(), 'agent.db'), migrations: TABLE });
    const commit = createCommitBatcher(db, createWalSyncer(db));
    const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
    await commit(() => insert.run(1));
    // Its first insert succeeds, its second violates UNIQUE: the first must not stay.
    await expect(commit(() => { insert.run(5); insert.run(1); }, { durable: true })).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
    await commit(() => insert.run(6), { durable: true });
    await commit.drain();
    expect(db.prepare('SELECT x FROM t ORDER BY x').pluck().all()).toEqual([1, 6]);
    expect(db.inTransaction).toBe(false);
    db.close();
  });

  it('a change queued after the database closed fails its caller instead of crashing the process', async () => {
    const db = openDatabase({ path: join(tmpDir(), 'agent.db'), migrations: TABLE });
    const commit = createCommitBatcher(db, createWalSyncer(db));
    const late = commit(() => db.prepare('SELECT 1').get());
    db.close();
    await expect(late).rejects.toMatchObject({ code: 'TA_ERR_ABORTED' });
    await commit.drain();
  });

  it('changes queued while the WAL is being synced wait for that sync and commit together, in order', async () => {
    const dir = tmpDir();
    const db = openDatabase({ path: join(dir, 'agent.db'), migrations: TABLE });
    const commit = createCommitBatcher(db, createWalSyncer(db));
    const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
    // Frames in the WAL, from its size (no checkpoint meanwhile: it would start the WAL over).
    db.pragma('wal_autocheckpoint = 0');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const walFrames = () => (statSync(join(dir, 'agent.db-wal')).size - 32) / (24 + pageSize);
    const other = openDatabase({ path: join(dir, 'agent.db'), readonly: true });
    const seen = () => other.prepare('SELECT x FROM t ORDER BY x').pluck().all();
    const pool = holdPool(dir);
    const start = walFrames();
    const first = commit(() => insert.run(1), { durable: true });
    await nextTurn();
    await nextTurn();
    expect(seen()).toEqual([1]); // committed; its sync is waiting for the pool
    const before = walFrames();
    const oneTransaction = before - start; // the table's page and its index's
    const later = [commit(() => insert.run(2)), commit(() => insert.run(3), { durable: true })];
    await nextTurn();
    later.push(commit(() => insert.run(4)));
    await nextTurn();
    await nextTurn();
    expect(seen()).toEqual([1]); // 2 to 4 wait for the running sync
    await Promise.all([first, ...later, pool.release()]);
    expect(seen()).toEqual([1, 2, 3, 4]);
    // One transaction for the three: their pages written to the WAL once, not three times.
    expect(walFrames() - before).toBe(oneTransaction);
    await commit.drain();
    other.close();
    db.close();
  });

  it('shares the WAL syncer with the face cache: its changes wait for a face commit sync, then share the next', async () => {
    const dir = tmpDir();
    const db = openDatabase({ path: join(dir, 'agent.db'), migrations: TABLE });
    db.exec('CREATE TABLE faces (id INTEGER)');
    const syncer = createWalSyncer(db);
    const commit = createCommitBatcher(db, syncer);
    const faceCommit = createDurableCommit(db, syncer);
    const other = openDatabase({ path: join(dir, 'agent.db'), readonly: true });
    const seen = () => other.prepare('SELECT x FROM t ORDER BY x').pluck().all();
    let settled = 0;
    syncer.onSettled(() => { settled++; });
    const pool = holdPool(dir);
    // The face cache's commit, visible at once; its sync is held on the pool.
    const face = faceCommit(() => db.prepare('INSERT INTO faces (id) VALUES (1)').run());
    expect(syncer.busy()).toBe(true);
    const outbox = [commit(() => insert(db, 1), { durable: true }), commit(() => insert(db, 2))];
    await nextTurn();
    await nextTurn();
    expect(seen()).toEqual([]); // the outbox waits for the sync the face cache started
    const secondFace = faceCommit(() => db.prepare('INSERT INTO faces (id) VALUES (2)').run());
    await pool.release();
    await Promise.all([face.synced, secondFace.synced, ...outbox]);
    expect(seen()).toEqual([1, 2]);
    // The face commit's sync, then one more for the outbox's batch and the second face commit.
    expect(settled).toBe(2);
    await commit.drain();
    await syncer.close();
    other.close();
    db.close();
  });
});

function insert(db: ReturnType<typeof openDatabase>, x: number): void {
  db.prepare('INSERT INTO t (x) VALUES (?)').run(x);
}
