import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inTransaction, openDatabase, schemaVersion } from '../../src/db/database.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { tmpDir } from '../helpers/tmp.js';

const tmp = () => tmpDir('ta-db-');

describe('openDatabase', () => {
  it('creates agent.db in WAL mode with synchronous=FULL and the latest schema', () => {
    const path = join(tmp(), 'state', 'agent.db');
    const db = openDatabase({ path });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    expect(schemaVersion(db)).toBe(MIGRATIONS.at(-1)!.version);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").pluck().all();
    expect(tables).toEqual(expect.arrayContaining(['faces', 'outbox', 'voiceprints', 'speakers', 'tts_cache', 'sync_runs']));
    db.close();
  });

  it('applies only the migrations not yet applied, and keeps data across reopen', () => {
    const path = join(tmp(), 'agent.db');
    const m1 = { version: 1, name: 'one', sql: 'CREATE TABLE t (x INTEGER);' };
    const m2 = { version: 2, name: 'two', sql: 'ALTER TABLE t ADD COLUMN y TEXT;' };
    let db = openDatabase({ path, migrations: [m1] });
    db.prepare('INSERT INTO t (x) VALUES (1)').run();
    db.close();
    db = openDatabase({ path, migrations: [m1, m2] });
    expect(schemaVersion(db)).toBe(2);
    expect(db.prepare('SELECT x, y FROM t').get()).toEqual({ x: 1, y: null });
    db.close();
  });

  it('upgrades an outbox written by release 1 (schema 2): rows kept, the dispatcher indexes hold only unfinished rows', () => {
    const path = join(tmp(), 'agent.db');
    let db = openDatabase({ path, migrations: MIGRATIONS.filter((m) => m.version <= 2) });
    const insert = db.prepare(`INSERT INTO outbox (kind, name, source_path, source_size, source_mtime_ms, content_sha256, size, state, finalized, created_at, updated_at)
      VALUES ('faces', ?, ?, 1, 1, 'h', 1, ?, ?, 1, 1)`);
    insert.run('ann', 'faces/ann.jpg', 'done', 1);
    insert.run('ben', 'faces/ben.jpg', 'queued', 0);
    db.close();
    db = openDatabase({ path });
    expect(schemaVersion(db)).toBe(MIGRATIONS.at(-1)!.version);
    expect(db.prepare('SELECT name FROM outbox ORDER BY id').pluck().all()).toEqual(['ann', 'ben']);
    const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox' ORDER BY name").pluck().all();
    expect(indexes).toEqual(['outbox_due', 'outbox_failed', 'outbox_name', 'outbox_queue', 'outbox_source']);
    expect(db.prepare('SELECT source_path FROM outbox INDEXED BY outbox_source WHERE finalized = 0').pluck().all()).toEqual(['faces/ben.jpg']);
    db.close();
  });

  it('rolls back a failing migration as a whole', () => {
    const path = join(tmp(), 'agent.db');
    const bad = { version: 1, name: 'bad', sql: 'CREATE TABLE ok (x); CREATE TABLE broken (;' };
    expect(() => openDatabase({ path, migrations: [bad] })).toThrow();
    const db = openDatabase({ path, migrations: [] });
    expect(schemaVersion(db)).toBe(0);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name='ok'").pluck().get()).toBe(0);
    db.close();
  });

  it('refuses a database written by a newer agent, saying what to do', () => {
    const path = join(tmp(), 'agent.db');
    const db = openDatabase({ path, migrations: [] });
    db.pragma('user_version = 99');
    db.close();
    expect(() => openDatabase({ path })).toThrow(/schema version 99.*upgrade the agent/);
  });

  it('explains an unusable location', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'state'), 'a file where a folder should be');
    expect(() => openDatabase({ path: join(dir, 'state', 'agent.db') })).toThrow(/cannot open the database .*state_dir exists and is writable/);
  });

  it('inTransaction commits all or nothing', () => {
    const db = openDatabase({ path: join(tmp(), 'agent.db'), migrations: [{ version: 1, name: 't', sql: 'CREATE TABLE t (x INTEGER UNIQUE);' }] });
    const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
    expect(() => inTransaction(db, () => { insert.run(1); insert.run(1); })).toThrow();
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(0);
    inTransaction(db, () => { insert.run(1); insert.run(2); });
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(2);
    db.close();
  });
});
