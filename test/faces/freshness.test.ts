import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GROUP, harness, jpeg, png, readIndex, type Harness } from './face-fixtures.js';
import { pickOldest, roundCandidate, timedPassDelay } from '../../src/faces/recheck.js';
import { createRecheckPacer } from '../../src/faces/recheck-pacer.js';
import type { FaceSync } from '../../src/faces/types.js';

// A face image replaced on the service (the emulator's set_image, as an administrator would) reaches
// the cache by the re-checks going round the group. Timed passes are run one sync_interval apart on
// the sync's own clock (no minutes of wall time); the requests and bytes are the emulator's.

/** The default sync_interval: the freshness targets are for default settings. */
const SYNC_INTERVAL = 300_000;

/** The cached file of `faceId` holds the service's image. */
function cacheMatches(h: Harness, faceId: string): boolean {
  const entry = readIndex(h.facesDir).find((e) => e.face_id === faceId);
  const server = h.emu.state.faceImage(faceId);
  return !!entry && !!server && readFileSync(join(h.facesDir, entry.image)).equals(server);
}

/** Timed passes one sync_interval apart until the cache matches: how many it took (at most `max`), and what they cost. */
async function passesUntilMatch(h: Harness, sync: FaceSync, faceId: string, max: number) {
  h.emu.clearRequests();
  for (let pass = 1; pass <= max; pass++) {
    h.clock.now += SYNC_INTERVAL;
    const report = await sync.syncNow('interval');
    expect(report.ok).toBe(true);
    if (cacheMatches(h, faceId)) return { pass, requests: h.emu.requests.filter((r) => r.path.endsWith('/image')) };
  }
  return { pass: Infinity, requests: h.emu.requests.filter((r) => r.path.endsWith('/image')) };
}

async function group(size: number, opts: { validators?: boolean; imageBytes?: number; bytesPerHour?: number } = {}) {
  const h = await harness({ concurrency: 8, faces: { sync_interval: SYNC_INTERVAL, ...(opts.bytesPerHour ? { recheck_bytes_per_hour: opts.bytesPerHour } : {}) } });
  h.emu.configure({ validators: opts.validators ?? true });
  const faces = h.emu.seedFaces(GROUP, Array.from({ length: size }, (_, i) => ({ name: `f${i}`, image: jpeg((opts.imageBytes ?? 2000) + (i % 7)) })));
  const sync = h.make();
  expect(await sync.syncNow('start')).toMatchObject({ ok: true, added: size });
  return { h, sync, faces };
}

describe('a face image replaced on the service reaches the cache', () => {
  it('20 faces, validators: the next timed pass re-checks all 20 (19 answered 304) and takes the new image', async () => {
    const { h, sync, faces } = await group(20);
    const target = faces[7]!;
    h.emu.setImage(target.face_id, png(2100));
    expect(cacheMatches(h, target.face_id)).toBe(false);

    const { pass, requests } = await passesUntilMatch(h, sync, target.face_id, 3);

    expect(pass).toBe(1);
    expect(requests.map((r) => r.status).sort()).toEqual([...Array(19).fill(304), 200].sort());
    const rechecks = sync.status().rechecks;
    expect(rechecks).toMatchObject({ mode: 'conditional', paced_by: 'requests', deferred: 0, round_s: SYNC_INTERVAL / 1000, oldest_check_age_s: 0 });
    expect(rechecks.last_hour.requests).toBe(20);
    h.clock.now += 42_000;
    expect(await h.registry.metrics()).toContain('terminal_agent_face_recheck_oldest_age_seconds 42');
  });

  it('500 faces, validators: within one sync_interval at the default budget', async () => {
    const { h, sync, faces } = await group(500);
    const target = faces[321]!;
    h.emu.setImage(target.face_id, png(2100));
    const { pass, requests } = await passesUntilMatch(h, sync, target.face_id, 3);
    expect(pass).toBe(1);
    expect(requests).toHaveLength(500);
    expect(requests.filter((r) => r.status === 304)).toHaveLength(499);
  });

  it('a new id in the listing is a change at once: fetched by the very next pass, even one that re-checks nothing', async () => {
    const { h, sync, faces } = await group(20);
    await sync.syncNow('interval'); // no time has passed: nothing is due
    const target = faces[3]!;
    h.emu.setImage(target.face_id, png(2200), { changeId: true });
    h.emu.clearRequests();

    const report = await sync.syncNow('interval');

    expect(report).toMatchObject({ ok: true, updated: 1, image_requests: 1 });
    expect(cacheMatches(h, target.face_id)).toBe(true);
    expect(readIndex(h.facesDir).find((e) => e.face_id === target.face_id)!.id).toBe(h.emu.state.face(target.face_id)!.id);

    // A new id with the same image (a service renumbering its records) costs a 304, not a download.
    const same = faces[4]!;
    h.emu.setImage(same.face_id, h.emu.state.faceImage(same.face_id)!, { changeId: true });
    h.emu.clearRequests();
    expect(await sync.syncNow('interval')).toMatchObject({ ok: true, updated: 1, image_requests: 1 });
    expect(h.emu.requests.filter((r) => r.path.endsWith('/image')).map((r) => r.status)).toEqual([304]);
    expect(readIndex(h.facesDir).find((e) => e.face_id === same.face_id)!.id).toBe(h.emu.state.face(same.face_id)!.id);
  });

  it('an image changed with the same id, on a service with no validators: found by the next round, and status says every re-check is a download', async () => {
    const { h, sync, faces } = await group(20, { validators: false });
    const target = faces[11]!;
    h.emu.setImage(target.face_id, png(2300));

    const { pass, requests } = await passesUntilMatch(h, sync, target.face_id, 3);

    expect(pass).toBe(1);
    expect(requests).toHaveLength(20);
    expect(requests.every((r) => r.status === 200)).toBe(true);
    const rechecks = sync.status().rechecks;
    expect(rechecks).toMatchObject({ mode: 'full', round_s: SYNC_INTERVAL / 1000 });
    // Every re-check was a whole image: the bytes of the group.
    expect(rechecks.last_hour.bytes).toBe(faces.reduce((n, f) => n + h.emu.state.face(f.face_id)!.size, 0));
  });

  it('with no validators the byte budget sets the pace, and status tells how long a round takes at it', async () => {
    // 200 faces of ~4 KB: 800 KB a round; at 1 MB an hour the budget allows one round in about 46 min.
    const { h, sync } = await group(200, { validators: false, imageBytes: 4000, bytesPerHour: 1024 * 1024 });
    const perPass: number[] = [];
    for (let i = 0; i < 6; i++) {
      h.emu.clearRequests();
      h.clock.now += SYNC_INTERVAL;
      await sync.syncNow('interval');
      perPass.push(h.emu.requests.filter((r) => r.path.endsWith('/image')).length);
    }
    // The bucket holds 6 min of budget at first (26 images), then refills 5 min a pass: 87 KB, 21 or 22 images.
    expect(perPass[0]).toBe(26);
    for (const n of perPass.slice(1)) expect([21, 22]).toContain(n);
    const rechecks = sync.status().rechecks;
    expect(rechecks).toMatchObject({ mode: 'full', paced_by: 'bytes' });
    expect(rechecks.round_s! / 60).toBeCloseTo((200 * 4003) / (1024 * 1024) * 60, 0);
    expect(rechecks.deferred).toBeGreaterThan(150);
    // The oldest check is still the first sync's, six passes ago: the round has not come back to it.
    expect(rechecks.oldest_check_age_s).toBe((6 * SYNC_INTERVAL) / 1000);
    expect(rechecks.last_hour.bytes).toBeLessThanOrEqual(1024 * 1024 * (6 * 5 + 1) / 60 + 4100);
  });

  it('a manual sync goes round whatever the budget allows, however recently the faces were checked', async () => {
    const { h, sync, faces } = await group(20);
    h.emu.setImage(faces[0]!.face_id, png(2400));
    h.emu.clearRequests();
    expect(await sync.syncNow('manual')).toMatchObject({ ok: true, updated: 1, image_requests: 20 });
    expect(cacheMatches(h, faces[0]!.face_id)).toBe(true);
  });
});

describe('re-check pacing', () => {
  const stats = (served: number, withValidators = served, meanBytes = 2000) => ({ served, withValidators, meanBytes, oldestCheckAt: 0 });
  const budget = { requestsPerMinute: 200, bytesPerHour: 64 * 1024 * 1024 };

  it('timed passes come a little before each sync_interval, at random, so that a fleet started together drifts apart', async () => {
    expect(timedPassDelay(300_000, () => 0)).toBe(270_000);
    expect(timedPassDelay(300_000, () => 0.999_999)).toBeLessThanOrEqual(300_000);
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'ada', image: jpeg() }]);
    const sync = h.make({ random: () => 0.5 });
    await sync.start();
    for (let i = 0; i < 200 && sync.status().next_sync_at === null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(Date.parse(sync.status().next_sync_at!)).toBe(h.clock.now + 57_000); // 60 s less 5 %
  });

  it('takes overdue faces first (a seeded image, one unchecked for image_recheck_interval), then the longest unchecked, at most the limit', () => {
    const c = (checkedAt: number, overdueSince: number | null = null) => ({ checkedAt, overdueSince });
    const { picked, deferred } = pickOldest([c(30), c(10), c(50, 45), c(20), c(60, 40)], 4);
    expect(picked).toEqual([c(60, 40), c(50, 45), c(10), c(20)]);
    expect(deferred).toBe(1);
    // A timed pass leaves a face checked less than minAge ago alone, unless it is overdue.
    expect(roundCandidate({ image_checked_at: 1000, image_recheck_at: 9000 }, 1500, 600)).toBeNull();
    expect(roundCandidate({ image_checked_at: 1000, image_recheck_at: 1400 }, 1500, 600)).toEqual(c(1000, 1400));
    expect(roundCandidate({ image_checked_at: null, image_recheck_at: null }, 1500, 600)).toEqual(c(0));
  });

  it('the request budget refills with the clock and holds at most one sync_interval and a minute', () => {
    const pacer = createRecheckPacer();
    const interval = 300_000;
    expect(pacer.allowance(0, budget, interval, stats(10_000))).toBe(1200); // 6 min of 200 a minute
    pacer.spend(0, { sent: 1200, notModified: 1200, sameBody: 0, bytes: 0 }, 8800, budget, interval);
    expect(pacer.allowance(interval, budget, interval, stats(10_000))).toBe(1000);
    pacer.spend(interval, { sent: 1000, notModified: 1000, sameBody: 0, bytes: 0 }, 7800, budget, interval);
    // A day offline buys no burst.
    expect(pacer.allowance(interval + 86_400_000, budget, interval, stats(10_000))).toBe(1200);
    expect(pacer.status(interval, budget, interval, stats(10_000))).toMatchObject({ mode: 'conditional', round_s: 3000, last_hour: { requests: 2200 } });
  });

  it('a service answering in full with the bytes the cache has is noticed, and the byte budget then sets the pace', () => {
    const pacer = createRecheckPacer();
    const interval = 300_000;
    const s = stats(10_000, 10_000, 30_000);
    pacer.allowance(0, budget, interval, s);
    pacer.spend(0, { sent: 100, notModified: 0, sameBody: 100, bytes: 3_000_000 }, 0, budget, interval);
    expect(pacer.mode(s)).toBe('full');
    // 64 MB an hour at 30 KB an image: 2,237 an hour, about 186 a 5 min pass.
    const n = pacer.allowance(interval, budget, interval, s);
    expect(n).toBeGreaterThan(150);
    expect(n).toBeLessThan(230);
    const st = pacer.status(interval, budget, interval, s);
    expect(st).toMatchObject({ mode: 'full', paced_by: 'bytes' });
    expect(st.round_s! / 3600).toBeCloseTo(10_000 / 2237, 1);
    // A cache holding no validator at all is a service that sends none, before any re-check.
    expect(createRecheckPacer().mode(stats(5, 0))).toBe('full');
  });
});
