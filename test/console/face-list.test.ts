import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/db/database.js';
import { createWalSyncer } from '../../src/db/wal-sync.js';
import { createFaceStore, type FaceRow } from '../../src/faces/face-store.js';
import { createFaceList } from '../../src/console/face-list.js';
import { PreparedJson } from '../../src/console/http.js';
import type { AgentStatus } from '../../src/control/types.js';
import { tmpDir } from '../helpers/tmp.js';
import { faceRow } from '../faces/face-fixtures.js';

// The gallery's list kept between asks (src/console/face-list.ts), over a real face store in a real
// agent.db: the answer follows every change to the cache, and the list is read again only after
// one. The daemon's status is a stand-in here (the list's own fields come from it; the whole
// route against a real daemon: console-api.test.ts).

function row(i: number, name = `face-${i}`): FaceRow {
  return faceRow(i.toString(16).padStart(32, '0'), { id: i, name, image_etag: `"${i}"`, image_last_modified: 'Fri, 27 Nov 2026 19:09:32 GMT' });
}

const status = { faces: { cached: 0, last_sync: null, last_ok_sync_at: '2026-12-02T00:00:00.000Z' }, components: { faces: { state: 'idle' } } } as unknown as AgentStatus;

async function setUp(keepMs?: number) {
  const db = openDatabase({ path: join(tmpDir('ta-face-list-'), 'agent.db') });
  const store = createFaceStore(db, createWalSyncer(db));
  await store.commit({ upserts: [row(1, 'Ada'), row(2, 'Grace'), row(3, 'Alan')], deletes: [] });
  let reads = 0;
  const list = createFaceList({
    faces: () => {
      reads++;
      return store.cachedFaces();
    },
    version: () => store.version(),
    status: () => status,
    ...(keepMs !== undefined ? { keepMs } : {}),
  });
  return { db, store, list, reads: () => reads };
}

const parsed = (a: unknown) => JSON.parse(a instanceof PreparedJson ? a.text : JSON.stringify(a)) as { faces: { name: string; face_id: string; thumb_url: string }[]; total: number; matched: number; synced_at: string };

describe('the console\'s face list', () => {
  it('answers again from what it kept until the cache changes, then from the cache', async () => {
    const { db, store, list, reads } = await setUp();
    const first = parsed(await list.answer(''));
    expect(first.faces.map((f) => f.name)).toEqual(['Ada', 'Grace', 'Alan']);
    expect(first).toMatchObject({ total: 3, matched: 3, synced_at: '2026-12-02T00:00:00.000Z' });
    expect(first.faces[0]!.thumb_url).toMatch(/^\/api\/faces\/0+1\/thumb\?v=/);
    expect(parsed(await list.answer(''))).toEqual(first);
    expect(parsed(await list.answer('gr')).faces.map((f) => f.name)).toEqual(['Grace']);
    expect(reads()).toBe(1);
    await store.commit({ upserts: [row(2, 'Grace Hopper'), row(4, 'Edsger')], deletes: [row(1).face_id] });
    const after = parsed(await list.answer(''));
    expect(after.faces.map((f) => f.name)).toEqual(['Grace Hopper', 'Alan', 'Edsger']);
    expect(after.total).toBe(3);
    expect(reads()).toBe(2);
    store.forgetImages([row(3).face_id]);
    expect(parsed(await list.answer('')).faces.map((f) => f.name)).toEqual(['Grace Hopper', 'Edsger']);
    db.close();
  });

  it('searches by name or face_id, and says how many matched', async () => {
    const { db, list } = await setUp();
    const byName = parsed(await list.answer('al'));
    expect(byName.faces.map((f) => f.name)).toEqual(['Alan']);
    expect(byName).toMatchObject({ total: 3, matched: 1 });
    expect(parsed(await list.answer(row(2).face_id.slice(-4))).faces.map((f) => f.name)).toEqual(['Grace']);
    db.close();
  });

  it('lets go of the list when nobody has asked for a while, and reads it again at the next ask', async () => {
    const { db, list, reads } = await setUp(50);
    await list.answer('');
    await list.answer('');
    expect(reads()).toBe(1);
    await sleep(120);
    await list.answer('');
    expect(reads()).toBe(2);
    list.close();
    await list.answer('');
    expect(reads()).toBe(3);
    db.close();
  });

  it('keeps nothing when the cache has no version to compare', async () => {
    const db = openDatabase({ path: join(tmpDir('ta-face-list-'), 'agent.db') });
    const store = createFaceStore(db, createWalSyncer(db));
    await store.commit({ upserts: [row(1, 'Ada')], deletes: [] });
    let reads = 0;
    const list = createFaceList({ faces: () => { reads++; return store.cachedFaces(); }, status: () => status });
    await list.answer('');
    await list.answer('');
    expect(reads).toBe(2);
    db.close();
  });
});
