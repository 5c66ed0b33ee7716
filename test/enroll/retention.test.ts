import { existsSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createOutboxRetention } from '../../src/enroll/retention.js';
import { jpeg, put, startRig, waitFor } from './fixtures.js';

// Years of unattended running must not grow agent.db without bound, and pruning must never break
// "the same content dropped again is not sent again". Real enrollment, real emulator, real agent.db;
// the retention runs with a clock 31 days ahead instead of waiting a month.

const DAY = 24 * 3600_000;

interface Counts { total: number; failed: number; done: number }
const counts = (rig: Awaited<ReturnType<typeof startRig>>): Counts => rig.db.prepare<[], Counts>(
  "SELECT COUNT(*) AS total, SUM(state = 'failed') AS failed, SUM(state = 'done') AS done FROM outbox",
).get()!;
// Result files are written before a row is marked finalized: wait for the mark, not the files.
const allFinalized = (rig: Awaited<ReturnType<typeof startRig>>, n: number) =>
  rig.db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM outbox WHERE finalized = 1').get()!.n === n;

describe('outbox retention', () => {
  it('prunes old failed rows and repeated drops, keeps the first upload of each content, and that still stops a re-upload', async () => {
    const rig = await startRig();
    const image = jpeg();
    await put(rig.dir, 'faces/ada.jpg', image);
    await waitFor('ada done', () => existsSync(join(rig.dir, 'done/faces/ada.json')));
    await put(rig.dir, 'faces/ada.jpg', image); // dropped again: a second done row, nothing sent
    await waitFor('ada.2 done', () => existsSync(join(rig.dir, 'done/faces/ada.2.json')));
    await put(rig.dir, 'faces/bad.jpg', 'not an image');
    await waitFor('bad failed', () => existsSync(join(rig.dir, 'failed/faces/bad.error.json')));
    await waitFor('three rows finalized', () => allFinalized(rig, 3));
    expect(counts(rig)).toEqual({ total: 3, failed: 1, done: 2 });

    // A staged copy no row names (an rm that failed), one a day old and one just made.
    const staging = join(rig.config.state_dir, 'enroll-staging');
    const oldOrphan = await put(staging, 'orphan-old', 'x');
    const youngOrphan = await put(staging, 'orphan-young', 'y');
    const dayAgo = (Date.now() - 2 * DAY) / 1000;
    utimesSync(oldOrphan, dayAgo, dayAgo);

    const retention = createOutboxRetention({ db: rig.db, staging });
    // Within 30 days nothing goes but the old orphan.
    expect(await retention.run(Date.now())).toEqual({ rowsDeleted: 0, metaEmptied: 0, orphansRemoved: 1 });
    expect(existsSync(oldOrphan)).toBe(false);
    expect(existsSync(youngOrphan)).toBe(true);

    expect(await retention.run(Date.now() + 31 * DAY)).toMatchObject({ rowsDeleted: 2 });
    expect(counts(rig)).toEqual({ total: 1, failed: 0, done: 1 });
    // The operator's result files are never touched.
    for (const f of ['done/faces/ada.json', 'done/faces/ada.2.json', 'failed/faces/bad.error.json']) expect(existsSync(join(rig.dir, f)), f).toBe(true);

    // The kept row still answers a third drop of the same image: no upload.
    await put(rig.dir, 'faces/ada.jpg', image);
    await waitFor('ada.3 done', () => existsSync(join(rig.dir, 'done/faces/ada.3.json')));
    expect(rig.emulator.requests.filter((r) => r.method === 'POST' || r.method === 'PUT')).toHaveLength(1);
  });

  it('beyond the row cap the oldest prunable rows go first, whatever their age', async () => {
    const rig = await startRig();
    for (const n of ['a', 'b', 'c', 'd']) await put(rig.dir, `faces/${n}.jpg`, 'not an image');
    await waitFor('four failed and finalized', () => counts(rig).failed === 4 && allFinalized(rig, 4));
    const ids = rig.db.prepare<[], { id: number }>('SELECT id FROM outbox ORDER BY id').all().map((r) => r.id);
    const retention = createOutboxRetention({ db: rig.db, staging: join(rig.config.state_dir, 'enroll-staging'), limits: { maxPrunableRows: 2 } });
    expect(await retention.run(Date.now())).toMatchObject({ rowsDeleted: 2 });
    expect(rig.db.prepare<[], { id: number }>('SELECT id FROM outbox ORDER BY id').all().map((r) => r.id)).toEqual(ids.slice(2));
  });
});
