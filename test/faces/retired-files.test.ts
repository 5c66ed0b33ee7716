import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.js';
import { createWalSyncer } from '../../src/db/wal-sync.js';
import { createCacheFiles } from '../../src/faces/cache-files.js';
import { createFaceStore } from '../../src/faces/face-store.js';
import { createRetiredFiles } from '../../src/faces/retired-files.js';
import { tmpDir } from '../helpers/tmp.js';
import { faceRow } from './face-fixtures.js';

// Image files a sync dropped from index.json, in a real faces/ folder beside a real agent.db: a
// reader that loaded the previous index may still open them until their grace is over.

const FACE = 'ab'.repeat(16);

const row = (imageFile: string) => faceRow(FACE, { image_file: imageFile, image_bytes: 4 });

function setup() {
  const state = tmpDir('ta-retired-');
  const dir = join(state, 'faces');
  mkdirSync(dir);
  const db = openDatabase({ path: join(state, 'agent.db') });
  const store = createFaceStore(db, createWalSyncer(db));
  const clock = { now: 1_000_000 };
  const retired = createRetiredFiles({ files: createCacheFiles(dir), store, graceMs: 60_000, now: () => clock.now });
  const put = (name: string) => writeFileSync(join(dir, name), 'jpeg');
  return { dir, db, store, clock, retired, put };
}

describe('retired face images', () => {
  it('are kept through their grace and deleted at the first call after it', async () => {
    const t = setup();
    t.put(`${FACE}.jpg`);
    await t.store.commit({ upserts: [row(`${FACE}.png`)], deletes: [] });
    t.retired.add([`${FACE}.jpg`]);
    t.clock.now += 59_999;
    await t.retired.removeDue();
    expect(existsSync(join(t.dir, `${FACE}.jpg`))).toBe(true);
    t.clock.now += 1;
    await t.retired.removeDue();
    expect(existsSync(join(t.dir, `${FACE}.jpg`))).toBe(false);
    t.db.close();
  });

  // Whether the rows are in memory (a busy cache) or only in agent.db (after a sync), the answer is the table's.
  it.each([['in agent.db only', false], ['also in memory', true]])('a file a row names again by then (jpg -> png -> jpg) is kept: rows %s', async (_where, loaded) => {
    const t = setup();
    if (loaded) await t.store.loadRows();
    t.put(`${FACE}.jpg`);
    t.put(`${FACE}.png`);
    await t.store.commit({ upserts: [row(`${FACE}.png`)], deletes: [] });
    t.retired.add([`${FACE}.jpg`]);
    t.clock.now += 30_000;
    // The face went back to jpg: its png is retired in turn, and the jpg is the one served.
    await t.store.commit({ upserts: [row(`${FACE}.jpg`)], deletes: [] });
    t.retired.add([`${FACE}.png`]);
    t.clock.now += 30_000;
    await t.retired.removeDue();
    expect(existsSync(join(t.dir, `${FACE}.jpg`))).toBe(true);
    expect(existsSync(join(t.dir, `${FACE}.png`))).toBe(true);
    t.clock.now += 30_000;
    await t.retired.removeDue();
    expect(existsSync(join(t.dir, `${FACE}.jpg`))).toBe(true);
    expect(existsSync(join(t.dir, `${FACE}.png`))).toBe(false);
    t.db.close();
  });
});
