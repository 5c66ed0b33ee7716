import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import {
  GROUP, OTHER_GROUP, OTHER_SECRET, expectIndexMatchesServer, harness, imageRequests, jpeg, listRequests, png, readIndex, writeTemp,
} from './face-fixtures.js';

describe('face sync against the emulator', () => {
  it('first sync caches the group: rows, image files and index.json; another group never appears', async () => {
    const h = await harness();
    const mine = h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: png() }, { name: 'carol', image: jpeg(30_000) }]);
    const theirs = h.emu.seedFaces(OTHER_GROUP, [{ name: 'mallory', image: jpeg() }]);
    const sync = h.make();

    const report = await sync.syncNow();

    expect(report).toMatchObject({ ok: true, added: 3, updated: 0, removed: 0, failed: 0, image_requests: 3, changed: true, faces_cached: 3, error: null });
    const entries = expectIndexMatchesServer(h.facesDir, h.emu);
    expect(entries.map((e) => e.name).sort()).toEqual(['alice', 'bob', 'carol']);
    expect(entries.every((e) => e.group_id === GROUP)).toBe(true);
    const bob = entries.find((e) => e.name === 'bob')!;
    expect(bob.image).toBe(`${bob.face_id}.png`);
    expect(Object.keys(bob).sort()).toEqual(['face_id', 'group_id', 'id', 'image', 'name']);
    expect(sync.listCached().map((f) => f.face_id).sort()).toEqual(mine.map((f) => f.face_id).sort());
    // The other group's face is nowhere: not in the rows, the index, the folder, or the requests sent.
    const other = theirs[0]!.face_id;
    expect(sync.listCached().some((f) => f.face_id === other)).toBe(false);
    expect(readFileSync(join(h.facesDir, 'index.json'), 'utf8')).not.toContain(other);
    expect(existsSync(join(h.facesDir, `${other}.jpg`))).toBe(false);
    expect(h.emu.requests.some((r) => r.path.includes(other))).toBe(false);
    expect(sync.status()).toMatchObject({ state: 'idle', faces_cached: 3, last_sync: { ok: true, added: 3, image_requests: 3 }, last_error: null });
  });

  it('applies add, rename and delete made on the server; an unchanged face costs a timed pass no image request, a renamed one a 304', async () => {
    const h = await harness();
    const [alice, bob, carol] = h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }, { name: 'carol', image: jpeg() }]);
    const sync = h.make();
    await sync.syncNow();
    const dir = tmpDir();
    await h.client.createFace({ name: 'dave', image: { path: writeTemp(dir, 'd.jpg', jpeg()), contentType: 'image/jpeg' } });
    await h.client.updateFace(bob!.face_id, { name: 'robert' });
    await h.client.deleteFace(carol!.face_id);
    h.emu.clearRequests();

    const report = await sync.syncNow('interval');

    expect(report).toMatchObject({ ok: true, added: 1, updated: 1, removed: 1, failed: 0, image_requests: 2, faces_cached: 3 });
    expect(h.emu.requests.filter((r) => r.path.endsWith('/image')).map((r) => r.status).sort()).toEqual([200, 304]);
    const entries = expectIndexMatchesServer(h.facesDir, h.emu);
    expect(entries.map((e) => e.name).sort()).toEqual(['alice', 'dave', 'robert']);
    expect(existsSync(join(h.facesDir, `${carol!.face_id}.jpg`))).toBe(false);
    expect(entries.find((e) => e.face_id === alice!.face_id)).toBeDefined();

    h.emu.clearRequests();
    const idle = await sync.syncNow('interval');
    expect(idle).toMatchObject({ ok: true, added: 0, updated: 0, removed: 0, image_requests: 0, changed: false });
    expect(imageRequests(h.emu)).toBe(0);
  });

  it('the next timed pass re-checks every image of a small group with If-None-Match and replaces a changed one (new type included)', async () => {
    const h = await harness();
    const [alice, bob] = h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }]);
    const sync = h.make();
    await sync.syncNow();
    const dir = tmpDir();
    await h.client.updateFace(bob!.face_id, { name: 'bob', image: { path: writeTemp(dir, 'b.png', png()), contentType: 'image/png' } });

    h.emu.clearRequests();
    const early = await sync.syncNow('interval');
    expect(early.image_requests).toBe(0); // checked moments ago: the list carries no version, nothing is asked

    h.clock.now += 60_000; // sync_interval
    h.emu.clearRequests();
    const report = await sync.syncNow('interval');
    expect(report).toMatchObject({ ok: true, added: 0, updated: 1, image_requests: 2 });
    const statuses = h.emu.requests.filter((r) => r.path.endsWith('/image')).map((r) => [r.path.includes(alice!.face_id) ? 'alice' : 'bob', r.status]);
    expect(statuses.sort()).toEqual([['alice', 304], ['bob', 200]]);
    const entries = expectIndexMatchesServer(h.facesDir, h.emu);
    expect(entries.find((e) => e.name === 'bob')!.image).toBe(`${bob!.face_id}.png`);
    expect(existsSync(join(h.facesDir, `${bob!.face_id}.jpg`))).toBe(false);
  });

  it('refreshFace fetches a face this agent changed at once, without waiting for the recheck', async () => {
    const h = await harness();
    const [alice] = h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const sync = h.make();
    await sync.syncNow();
    const dir = tmpDir();
    const newImage = jpeg(4096);
    await h.client.updateFace(alice!.face_id, { name: 'alice2', image: { path: writeTemp(dir, 'a.jpg', newImage), contentType: 'image/jpeg' } });

    const report = await sync.refreshFace(alice!.face_id);

    expect(report).toMatchObject({ ok: true, updated: 1, image_requests: 1 });
    expect(readFileSync(join(h.facesDir, `${alice!.face_id}.jpg`)).equals(newImage)).toBe(true);
    expect(readIndex(h.facesDir)[0]!.name).toBe('alice2');
  });

  it('refreshes of several faces this agent renamed and re-imaged fetch each image once, whichever sync asks first', async () => {
    const h = await harness();
    const faces = h.emu.seedFaces(GROUP, Array.from({ length: 4 }, (_, i) => ({ name: `f${i}`, image: jpeg(2000 + i) })));
    const sync = h.make();
    await sync.syncNow();
    const dir = tmpDir();
    for (const f of faces.slice(0, 3)) {
      await h.client.updateFace(f.face_id, { name: `${f.name}-new`, image: { path: writeTemp(dir, `${f.name}.png`, png(2500)), contentType: 'image/png' } });
    }
    h.emu.clearRequests();

    const reports = await Promise.all(faces.slice(0, 3).map((f) => sync.refreshFace(f.face_id)));

    expect(reports.every((r) => r.ok)).toBe(true);
    expect(h.emu.requests.filter((r) => r.path.endsWith('/image')).map((r) => r.path).sort()).toEqual(faces.slice(0, 3).map((f) => `/v1/api/faces/${f.face_id}/image`).sort());
    expect(expectIndexMatchesServer(h.facesDir, h.emu).filter((e) => e.name.endsWith('-new'))).toHaveLength(3);
  });

  it('a large first sync caches every image whole', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, Array.from({ length: 60 }, (_, i) => ({ name: `f${i}`, image: i % 2 ? jpeg(3000) : png(3000) })));
    const report = await h.make().syncNow();
    expect(report).toMatchObject({ ok: true, added: 60, image_requests: 60 });
    expect(expectIndexMatchesServer(h.facesDir, h.emu)).toHaveLength(60);
  });

  it('concurrent sync requests share one running sync', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const sync = h.make();
    const [a, b, c] = await Promise.all([sync.syncNow(), sync.syncNow('manual'), sync.syncNow()]);
    expect(a).toBe(b);
    expect(b).toBe(c);
    expect(listRequests(h.emu)).toBe(1);
    expect(imageRequests(h.emu)).toBe(1);
  });

  it('exports sync results, duration and cached faces on the given registry', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }]);
    const sync = h.make();
    await sync.syncNow();
    const text = await h.registry.metrics();
    expect(text).toContain('terminal_agent_face_sync_total{result="ok"} 1');
    expect(text).toContain('terminal_agent_faces_cached 2');
    expect(text).toMatch(/terminal_agent_face_sync_duration_seconds_count 1/);
    expect(text).toContain('terminal_agent_face_image_requests_total 2');
  });

  it('a terminal of another group syncing into its own state_dir sees only its faces', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const [m] = h.emu.seedFaces(OTHER_GROUP, [{ name: 'mallory', image: jpeg() }]);
    const other = await harness({ emu: h.emu, secret: OTHER_SECRET });
    const report = await other.make().syncNow();
    expect(report).toMatchObject({ ok: true, added: 1 });
    expect(readIndex(other.facesDir).map((e) => e.face_id)).toEqual([m!.face_id]);
  });
});
