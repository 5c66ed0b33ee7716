import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import { indexVersion } from '../../src/faces/cache-files.js';
import { GROUP, expectIndexMatchesServer, harness, imageRequests, jpeg, listRequests, png, readIndex, writeTemp } from './face-fixtures.js';

// A face this agent uploaded goes into the cache from the bytes it sent (no download), and the
// service's own copy is asked for at the next regular sync: a service that re-encodes what it
// receives ends up in the cache all the same.

async function created(h: Awaited<ReturnType<typeof harness>>, name: string, bytes: Buffer, type = 'jpeg') {
  await h.client.createFace({ name, image: { path: writeTemp(tmpDir(), `${name}.${type}`, bytes), contentType: `image/${type}` } });
  return (await h.client.listFaces()).find((f) => f.name === name)!;
}

describe('seeding the face cache from uploaded images', () => {
  it('caches the sent bytes without a request, then replaces them with the service copy at the re-check after the next sync interval', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const sync = h.make();
    await sync.syncNow();
    const sent = jpeg(3000);
    const stored = png(2500); // what a re-encoding service would keep
    const bob = await created(h, 'bob', stored, 'png');
    h.emu.clearRequests();

    const report = await sync.seedFace({ face: bob, bytes: sent });

    expect(report).toMatchObject({ ok: true, added: 1, image_requests: 0, changed: true, faces_cached: 2 });
    expect(imageRequests(h.emu) + listRequests(h.emu)).toBe(0);
    expect(readFileSync(join(h.facesDir, `${bob.face_id}.jpg`)).equals(sent)).toBe(true);
    expect(readIndex(h.facesDir).map((e) => e.name).sort()).toEqual(['alice', 'bob']);

    // A timed pass before the interval is over leaves it alone.
    h.emu.clearRequests();
    expect(await sync.syncNow('interval')).toMatchObject({ ok: true, image_requests: 0 });

    h.clock.now += 60_000;
    h.emu.clearRequests();
    const recheck = await sync.syncNow('interval');
    // The round: alice asked again too (304).
    expect(recheck).toMatchObject({ ok: true, updated: 1, image_requests: 2 });
    const entries = expectIndexMatchesServer(h.facesDir, h.emu);
    expect(entries.find((e) => e.name === 'bob')!.image).toBe(`${bob.face_id}.png`);
    expect(readFileSync(join(h.facesDir, `${bob.face_id}.png`)).equals(stored)).toBe(true);
    expect(existsSync(join(h.facesDir, `${bob.face_id}.jpg`))).toBe(false);
  });

  it('a new image left half written by a crash under the name a seed wants is replaced whole, and no temp file stays', async () => {
    const h = await harness();
    const sync = h.make();
    await sync.syncNow();
    const bytes = jpeg(3500);
    const dave = await created(h, 'dave', bytes);
    // What a crash during an earlier seed of the same face leaves: the file, no row, no index entry.
    writeFileSync(join(h.facesDir, `${dave.face_id}.jpg`), bytes.subarray(0, 700));

    expect(await sync.seedFace({ face: dave, bytes })).toMatchObject({ ok: true, added: 1, image_requests: 0 });

    expect(readFileSync(join(h.facesDir, `${dave.face_id}.jpg`)).equals(bytes)).toBe(true);
    expect(readIndex(h.facesDir).find((e) => e.name === 'dave')?.image).toBe(`${dave.face_id}.jpg`);
    expect(readdirSync(h.facesDir).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('a service that keeps the bytes it received: the re-check changes nothing and the face is not asked again before its next turn', async () => {
    const h = await harness();
    const sync = h.make();
    await sync.syncNow();
    const bytes = jpeg(4000);
    const carol = await created(h, 'carol', bytes);
    await sync.seedFace({ face: carol, bytes });
    h.clock.now += 60_000;
    h.emu.clearRequests();
    expect(await sync.syncNow('interval')).toMatchObject({ ok: true, updated: 0, image_requests: 1, changed: false });
    expect(readFileSync(join(h.facesDir, `${carol.face_id}.jpg`)).equals(bytes)).toBe(true);
    h.clock.now += 20_000;
    h.emu.clearRequests();
    expect(await sync.syncNow('interval')).toMatchObject({ ok: true, image_requests: 0 });
  });

  it('seeds arriving during a sync share one pass and one index.json after it; a bad image is left to the next sync to download', async () => {
    const h = await harness();
    const sync = h.make();
    const faces = [];
    for (const n of ['d1', 'd2', 'd3']) {
      const bytes = jpeg(2100);
      faces.push({ face: await created(h, n, bytes), bytes });
    }
    const bad = await created(h, 'bad', jpeg(2200));
    const running = sync.syncNow();
    const seeded = Promise.all([
      ...faces.map((seed) => sync.seedFace(seed)),
      sync.seedFace({ face: bad, bytes: Buffer.from('not an image') }),
    ]);
    await running;
    const reports = await seeded;
    expect(new Set(reports).size).toBe(1);
    expect(reports[0]).toMatchObject({ ok: true, image_requests: 0 });
    // The first sync cached all four from downloads; the seeds of the three matched them.
    expect(expectIndexMatchesServer(h.facesDir, h.emu)).toHaveLength(4);
    expect(h.log.lines.some((l) => l.face_id === bad.face_id && String(l.msg).includes('not put into the cache'))).toBe(true);
  });

  it('seeds arriving one after another: after each pass the next waits four times as long as its rewrite of index.json (the whole group), and none is lost', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, Array.from({ length: 300 }, (_, i) => ({ name: `member-${i}`, image: jpeg(400) })));
    const sync = h.make();
    await sync.syncNow();
    const seeds = [];
    for (let i = 0; i < 12; i++) {
      const bytes = jpeg(2000 + i);
      seeds.push({ face: await created(h, `new-${i}`, bytes), bytes });
    }
    h.log.lines.length = 0;
    const reports = [];
    for (const seed of seeds) {
      reports.push(sync.seedFace(seed));
      await new Promise((r) => setTimeout(r, 3));
    }
    await Promise.all(reports);

    expect(expectIndexMatchesServer(h.facesDir, h.emu)).toHaveLength(312);
    // index.json and index.version are renamed into place together: the version is the index's,
    // and no temp file of either is left.
    expect(readFileSync(join(h.facesDir, 'index.version'), 'utf8').trim()).toBe(indexVersion(readFileSync(join(h.facesDir, 'index.json'), 'utf8')));
    expect(readdirSync(h.facesDir).filter((f) => f.startsWith('.'))).toEqual([]);
    // Each pass logs when it is done (its log time), how long it took and how long its index write took.
    const passes = h.log.lines.filter((l) => l.msg === 'face sync done' && l.reason === 'refresh')
      .map((l) => ({ end: Date.parse(l.time as string), ms: l.duration_ms as number, indexMs: l.seed_index_ms as number }));
    expect(passes.length).toBeGreaterThanOrEqual(2);
    expect(passes.length).toBeLessThan(seeds.length);
    for (let i = 1; i < passes.length; i++) {
      const gap = passes[i]!.end - passes[i]!.ms - passes[i - 1]!.end;
      // Log times and durations are whole milliseconds, and a timer may fire up to 1 ms early.
      expect(passes[i - 1]!.indexMs).toBeGreaterThan(0);
      expect(gap).toBeGreaterThanOrEqual(Math.min(1000, 4 * passes[i - 1]!.indexMs) - 3);
    }
  });
});
