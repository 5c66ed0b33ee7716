import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { tmpDir } from '../helpers/tmp.js';
import { GROUP, expectIndexMatchesServer, harness, imageRequests, jpeg, listRequests, readIndex, snapshot, writeTemp } from './face-fixtures.js';

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A synced cache of two faces, then server-side changes that the next sync would apply. */
async function syncedThenChanged() {
  const h = await harness();
  const [alice, bob] = h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }]);
  const sync = h.make();
  await sync.syncNow();
  const before = snapshot(h.facesDir);
  const dir = tmpDir();
  await h.client.createFace({ name: 'carol', image: { path: writeTemp(dir, 'c.jpg', jpeg(20_000)), contentType: 'image/jpeg' } });
  await h.client.createFace({ name: 'dave', image: { path: writeTemp(dir, 'd.jpg', jpeg(20_000)), contentType: 'image/jpeg' } });
  await h.client.updateFace(bob!.face_id, { name: 'robert' });
  await h.client.deleteFace(alice!.face_id);
  return { h, sync, before };
}

describe('face sync failures leave the previous cache whole', () => {
  it('server errors on GET /faces: nothing changes, the error is in status and metrics', async () => {
    const { h, sync, before } = await syncedThenChanged();
    h.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, times: 10 });

    const report = await sync.syncNow();

    expect(report.ok).toBe(false);
    expect(report.error).toMatchObject({ code: 'TA_ERR_SERVER', status: 503, exit_code: 69 });
    expect(snapshot(h.facesDir)).toEqual(before);
    expect(sync.listCached().map((f) => f.name).sort()).toEqual(['alice', 'bob']);
    expect(sync.status()).toMatchObject({ state: 'backoff', consecutive_failures: 1, faces_cached: 2, last_error: { code: 'TA_ERR_SERVER' } });
    expect(await h.registry.metrics()).toContain('terminal_agent_face_sync_total{result="error"} 1');
  });

  it('a server error on one image download aborts the sync before any commit', async () => {
    const { h, sync, before } = await syncedThenChanged();
    h.emu.faults.add({ method: 'GET', path: '/v1/api/faces/*/image', action: 'status', status: 500, times: 50 });

    const report = await sync.syncNow();

    expect(report.error?.code).toBe('TA_ERR_SERVER');
    expect(snapshot(h.facesDir)).toEqual(before);
    expect(sync.listCached().map((f) => f.name).sort()).toEqual(['alice', 'bob']);
  });

  it('a connection dropped mid-image leaves index.json, the files and the rows as they were, with no temp file', async () => {
    const { h, sync, before } = await syncedThenChanged();
    h.emu.faults.add({ method: 'GET', path: '/v1/api/faces/*/image', action: 'drop-body', times: 50 });

    const report = await sync.syncNow();

    expect(report.ok).toBe(false);
    expect(report.error?.code).toBe('TA_ERR_NETWORK');
    expect(h.emu.requests.some((r) => r.fault === 'rule:drop-body')).toBe(true);
    expect(snapshot(h.facesDir)).toEqual(before); // every file in faces/, dotfiles included
    expect(sync.listCached().map((f) => f.name).sort()).toEqual(['alice', 'bob']);

    h.emu.faults.clear();
    const next = await sync.syncNow();
    expect(next).toMatchObject({ ok: true, added: 2, updated: 1, removed: 1 });
    expect(expectIndexMatchesServer(h.facesDir, h.emu).map((e) => e.name).sort()).toEqual(['carol', 'dave', 'robert']);
  });

  it('stop() during a download aborts the sync and keeps the previous cache', async () => {
    const { h, sync, before } = await syncedThenChanged();
    h.emu.faults.add({ method: 'GET', path: '/v1/api/faces/*/image', action: 'delay', delayMs: 2_000, times: 10 });
    const pending = sync.syncNow();
    await until(() => h.emu.requests.some((r) => r.path.endsWith('/image')), 'an image request');
    await sync.stop();
    expect((await pending).ok).toBe(false);
    expect(snapshot(h.facesDir)).toEqual(before);
  });

  it('a bad image (truncated, or not an image) fails that face only; the rest of the sync goes on', async () => {
    const h = await harness();
    const cut = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(3000)]); // no EOI marker
    const [good, truncated] = h.emu.seedFaces(GROUP, [{ name: 'good', image: jpeg() }, { name: 'truncated', image: cut }]);
    const [jsonBody] = h.emu.seedFaces(GROUP, [{ name: 'json-body', image: jpeg() }]);
    h.emu.faults.add({ method: 'GET', path: `/v1/api/faces/${jsonBody!.face_id}/image`, action: 'json', times: 1 });
    const sync = h.make();

    const report = await sync.syncNow();

    expect(report).toMatchObject({ ok: true, added: 1, failed: 2 });
    expect(report.failures.map((f) => [f.name, f.code]).sort()).toEqual([['json-body', 'TA_ERR_BAD_RESPONSE'], ['truncated', 'TA_ERR_BAD_RESPONSE']]);
    expect(report.failures.find((f) => f.name === 'truncated')!.message).toMatch(/truncated/);
    expect(readIndex(h.facesDir).map((e) => e.face_id)).toEqual([good!.face_id]);
    expect(snapshot(h.facesDir).files).toEqual({ 'index.json': expect.any(String), 'index.version': expect.any(String), [`${good!.face_id}.jpg`]: expect.any(String) });
    expect(sync.status().failed_faces.map((f) => f.face_id).sort()).toEqual([jsonBody!.face_id, truncated!.face_id].sort());
    expect(await h.registry.metrics()).toContain('terminal_agent_face_sync_total{result="partial"} 1');

    // The next sync retries the failed faces; the one whose server answer is now right gets cached.
    h.emu.clearRequests();
    const next = await sync.syncNow('interval');
    expect(imageRequests(h.emu)).toBe(2);
    expect(next).toMatchObject({ ok: true, added: 1, failed: 1 });
    expect(readIndex(h.facesDir).map((e) => e.name).sort()).toEqual(['good', 'json-body']);
  });

  it('a 401 stops the loop with a clear error until reload()', async () => {
    const h = await harness({ secret: 'revoked-terminal-secret-000000' });
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const sync = h.make();
    await sync.start();
    await until(() => sync.status().state === 'auth_failed', 'auth_failed');
    await sleep(300); // backoff is 20-50 ms in these tests: a loop that kept trying would show here
    expect(listRequests(h.emu)).toBe(1);
    const st = sync.status();
    expect(st.next_sync_at).toBeNull();
    expect(st.last_error).toMatchObject({ code: 'TA_ERR_AUTH', status: 401, exit_code: 77 });
    expect(st.last_error!.message).toMatch(/terminal_secret.*reload/);
    expect(h.log.lines.some((l) => l.level === 'error' && String(l.msg).includes('face sync is stopped'))).toBe(true);
    expect(JSON.stringify(h.log.lines)).not.toContain('revoked-terminal-secret-000000');

    const manual = await sync.syncNow();
    expect(manual.error?.code).toBe('TA_ERR_AUTH');
    expect(listRequests(h.emu)).toBe(1); // refused locally, no request
    expect(await h.registry.metrics()).toContain('terminal_agent_face_sync_total{result="auth_error"} 1');

    sync.reload({ client: h.clientFor(TEST_TERMINAL_SECRET) });
    await until(() => sync.status().faces_cached === 1, 'a sync after reload');
    expect(sync.status()).toMatchObject({ state: 'idle', consecutive_failures: 0 });
  });

  it('offline: the loop retries with backoff while the cache keeps serving, and recovers', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const first = h.make();
    await first.syncNow();
    await first.stop();
    const before = snapshot(h.facesDir);
    h.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'drop', times: 6 });
    h.emu.clearRequests();
    const sync = h.make();
    await sync.start();
    await until(() => listRequests(h.emu) >= 4, 'several retries');
    expect(sync.listCached().map((f) => f.name)).toEqual(['alice']);
    expect(snapshot(h.facesDir)).toEqual(before);
    await until(() => sync.status().last_sync?.ok === true, 'recovery after the faults run out');
    expect(sync.status().consecutive_failures).toBe(0);
  });
});
