import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.js';
import { createWalSyncer } from '../../src/db/wal-sync.js';
import { createFaceStore, toCachedFace, type FaceRow } from '../../src/faces/face-store.js';
import { tmpDir } from '../helpers/tmp.js';
import { faceRow } from './face-fixtures.js';

// The face rows in a real agent.db (SQLite file, the agent's migrations). The store keeps them in
// memory while the cache is busy and drops them after a sync (an idle daemon of a large group
// holds neither them nor SQLite's page cache); what is read back must be the table as it is.

function row(i: number): FaceRow {
  return faceRow(i.toString(16).padStart(32, '0'), { id: i, name: `face-${i}`, image_etag: `"${i}"`, image_last_modified: 'Fri, 27 Nov 2026 19:09:32 GMT' });
}

async function storeWith(n: number) {
  const db = openDatabase({ path: join(tmpDir('ta-face-store-'), 'agent.db') });
  const store = createFaceStore(db, createWalSyncer(db));
  await store.commit({ upserts: Array.from({ length: n }, (_, i) => row(i + 1)), deletes: [] });
  return { db, store };
}

describe('face store rows in memory', () => {
  it('reads 1,234 rows back after release, in steps that leave the event loop free between them', async () => {
    const { db, store } = await storeWith(1_234);
    store.release();
    let ranMeanwhile = false;
    setImmediate(() => { ranMeanwhile = true; });
    await store.loadRows();
    // Read in steps of 500: a callback queued before the read ran before it ended.
    expect(ranMeanwhile).toBe(true);
    const rows = store.rowMap();
    expect(rows.size).toBe(1_234);
    expect(rows.get(row(700).face_id)).toEqual(row(700));
    expect(store.servedRows().map((r) => r.id)).toEqual(Array.from({ length: 1_234 }, (_, i) => i + 1));
    db.close();
  });

  it('a commit made while the rows are being read is not lost', async () => {
    const { db, store } = await storeWith(1_100);
    store.release();
    const loading = store.loadRows();
    // The first step has been read; this lands between two steps (the transaction is done when
    // commit() returns its promise; only the sync to disk is awaited).
    const committed = store.commit({ upserts: [row(5_000)], deletes: [row(1).face_id] });
    await loading;
    await committed;
    const rows = store.rowMap();
    expect(rows.size).toBe(1_100);
    expect(rows.has(row(5_000).face_id)).toBe(true);
    expect(rows.has(row(1).face_id)).toBe(false);
    db.close();
  });

  it('after release the rows are the table\'s, changes made before it included', async () => {
    const { db, store } = await storeWith(3);
    await store.commit({ upserts: [{ ...row(2), name: 'renamed' }], deletes: [] });
    store.release();
    expect(store.servedRows().map((r) => r.name)).toEqual(['face-1', 'renamed', 'face-3']);
    await store.loadRows();
    expect([...store.rowMap().values()].map((r) => r.name).sort()).toEqual(['face-1', 'face-3', 'renamed']);
    db.close();
  });

  it('every way of reading gives each row with all its columns as written, and one count', async () => {
    const { db, store } = await storeWith(4);
    const failed: FaceRow = { ...row(5), image_file: null, image_sha256: null, image_etag: null, image_last_modified: null, image_bytes: null, image_recheck_at: null, id: null, error: 'HTTP 404', error_code: 'TA_ERR_NOT_FOUND' };
    await store.commit({ upserts: [failed], deletes: [] });
    const table = [row(1), row(2), row(3), row(4)];
    store.release();
    // Straight from the table: the served rows, the failed ones, the count.
    expect(store.servedRows()).toEqual(table);
    expect(store.failedRows(10)).toEqual([failed]);
    expect(store.countServed()).toBe(4);
    // What the console, the control socket and `faces list --cached` show: read straight into that shape.
    const shown = table.map(toCachedFace);
    expect(shown[1]).toEqual({ face_id: row(2).face_id, group_id: 'g', id: 2, name: 'face-2', image: `${row(2).face_id}.jpg`, image_sha256: 'a'.repeat(64), image_bytes: 2048, updated_at: '1970-01-01T00:00:00.001Z' });
    expect(store.cachedFaces()).toEqual(shown);
    // At once (a caller that needs them before loadRows ran), then in steps.
    expect(store.allRows().sort((a, b) => (a.id ?? 0) - (b.id ?? 0))).toEqual([failed, ...table]);
    store.release();
    await store.loadRows();
    expect(store.rowMap().get(failed.face_id)).toEqual(failed);
    expect(store.servedRows()).toEqual(table);
    expect(store.cachedFaces()).toEqual(shown);
    expect(store.countServed()).toBe(4);
    await store.commit({ upserts: [row(6)], deletes: [row(1).face_id] });
    expect(store.countServed()).toBe(4);
    // Asked again after a commit, failedRows reads the table again (status asks it at every tick).
    expect(store.failedRows(10)).toEqual([failed]);
    const another: FaceRow = { ...failed, face_id: 'e'.repeat(32), name: 'another' };
    await store.commit({ upserts: [another], deletes: [] });
    expect(store.failedRows(10)).toEqual([another, failed]);
    expect(store.failedRows(1)).toEqual([another]);
    db.close();
  });
});
