import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.js';
import { createCommitBatcher } from '../../src/enroll/commit-batcher.js';
import { tmpDir } from '../helpers/tmp.js';

const TABLE = [{ version: 1, name: 't', sql: 'CREATE TABLE t (x INTEGER UNIQUE);' }];

describe('the outbox commit batcher', () => {
  it('commits changes queued together, each in its own savepoint, and drain() waits for durable ones', async () => {
    const db = openDatabase({ path: join(tmpDir(), 'agent.db'), migrations: TABLE });
    const commit = createCommitBatcher(db);
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
    const commit = createCommitBatcher(db);
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
    const commit = createCommitBatcher(db);
    const late = commit(() => db.prepare('SELECT 1').get());
    db.close();
    await expect(late).rejects.toMatchObject({ code: 'TA_ERR_ABORTED' });
    await commit.drain();
  });
});
