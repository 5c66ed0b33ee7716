import { describe, expect, it } from 'vitest';
import { renameSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { GROUP, expectIndexMatchesServer, harness, imageRequests, jpeg, snapshot, staged } from './face-fixtures.js';

// A sync pass that fails after downloading part of a large group keeps what it downloaded in
// faces/.staging/ (never visible to readers), so that the next pass, or the next start, fetches
// only what is still missing. Run against the emulator with one download at a time, so that the
// face whose image fails is the last one fetched.

async function failedFirstSync() {
  const h = await harness({ concurrency: 1 });
  const faces = h.emu.seedFaces(GROUP, Array.from({ length: 6 }, (_, i) => ({ name: `face-${i}`, image: jpeg(3000 + i) })));
  const last = faces.at(-1)!;
  h.emu.faults.add({ method: 'GET', path: `/v1/api/faces/${last.face_id}/image`, action: 'drop-body', times: 50 });
  const sync = h.make();
  const report = await sync.syncNow();
  return { h, sync, faces, last, report };
}

describe('face sync keeps the downloads of a failed pass', () => {
  it('a pass cut off by a dropped image keeps the finished downloads hidden, and the next pass fetches only the missing one', async () => {
    const { h, sync, report } = await failedFirstSync();
    expect(report).toMatchObject({ ok: false, error: { code: 'TA_ERR_NETWORK' } });
    // Readers see nothing new: no index, no image, no row.
    expect(snapshot(h.facesDir).files).toEqual({});
    expect(sync.listCached()).toEqual([]);
    // The five finished downloads wait in the hidden folder, without an image extension.
    const kept = Object.keys(staged(h.facesDir));
    expect(kept).toHaveLength(5);
    expect(kept.every((f) => !/\.(jpe?g|png|bmp|webp)$/.test(f))).toBe(true);

    h.emu.faults.clear();
    h.emu.clearRequests();
    const next = await sync.syncNow();
    expect(next).toMatchObject({ ok: true, added: 6, image_requests: 1 });
    expect(imageRequests(h.emu)).toBe(1);
    expect(expectIndexMatchesServer(h.facesDir, h.emu)).toHaveLength(6);
    expect(staged(h.facesDir)).toEqual({}); // a committed pass leaves no kept download behind
  });

  it('after a restart, kept downloads are checked against their sha256: a changed file is fetched again', async () => {
    const { h, sync } = await failedFirstSync();
    await sync.stop();
    const kept = Object.keys(staged(h.facesDir)).sort();
    // Same size, other bytes: what a disk error or a stray write would leave.
    const victim = join(h.facesDir, '.staging', kept[0]!);
    writeFileSync(victim, randomBytes(statSync(victim).size));

    h.emu.faults.clear();
    h.emu.clearRequests();
    const restarted = h.make();
    const report = await restarted.syncNow();
    expect(report).toMatchObject({ ok: true, added: 6 });
    expect(imageRequests(h.emu)).toBe(2); // the missing one and the damaged one
    expect(expectIndexMatchesServer(h.facesDir, h.emu)).toHaveLength(6);
    expect(h.log.lines.some((l) => String(l.msg).includes('does not match its record'))).toBe(true);
  });

  it('a crash while downloads were published in faces/ under their final names: the restart hides them again and uses them', async () => {
    const { h, sync, faces, last } = await failedFirstSync();
    await sync.stop();
    // What kill -9 during the pass leaves: recorded downloads already renamed to faces/<face_id>.jpg
    // (image-fetch.ts publishes a new face's image as soon as it is checked), named by no row.
    const rows = h.db.prepare('SELECT face_id, file FROM face_staging').all() as Array<{ face_id: string; file: string }>;
    expect(rows).toHaveLength(5);
    for (const r of rows.slice(0, 3)) {
      renameSync(join(h.facesDir, '.staging', r.file), join(h.facesDir, `${r.face_id}.jpg`));
      h.db.prepare('UPDATE face_staging SET file = ? WHERE face_id = ?').run(`${r.face_id}.jpg`, r.face_id);
    }
    expect(Object.keys(snapshot(h.facesDir).files)).toHaveLength(3);

    h.emu.faults.add({ method: 'GET', path: `/v1/api/faces/${last.face_id}/image`, action: 'drop-body', times: 50 });
    const restarted = h.make();
    await restarted.start();
    // Before any sync: faces/ holds only what index.json names again (nothing), the five are kept.
    expect(Object.keys(snapshot(h.facesDir).files).sort()).toEqual(['index.json', 'index.version']);
    expect(JSON.parse(snapshot(h.facesDir).index!)).toEqual([]);
    expect(Object.keys(staged(h.facesDir))).toHaveLength(5);
    h.emu.faults.clear();
    h.emu.clearRequests();
    const report = await restarted.syncNow();
    expect(report).toMatchObject({ ok: true, added: 6, image_requests: 1 });
    expect(expectIndexMatchesServer(h.facesDir, h.emu)).toHaveLength(faces.length);
    expect(staged(h.facesDir)).toEqual({});
    await restarted.stop();
  });

  it('drops kept downloads of faces deleted on the server meanwhile, and those older than the age bound', async () => {
    const { h, sync, faces } = await failedFirstSync();
    await sync.stop();
    await h.client.deleteFace(faces[0]!.face_id);
    h.emu.faults.clear();

    // Older than the bound: everything is fetched again.
    h.clock.now += 2 * 3_600_000;
    h.emu.clearRequests();
    const report = await h.make({ stagingMaxAgeMs: 3_600_000 }).syncNow();
    expect(report).toMatchObject({ ok: true, added: 5 });
    expect(imageRequests(h.emu)).toBe(5);
    const names = expectIndexMatchesServer(h.facesDir, h.emu).map((e) => e.name).sort();
    expect(names).toEqual(['face-1', 'face-2', 'face-3', 'face-4', 'face-5']);
    expect(staged(h.facesDir)).toEqual({});
  });

  it('a face deleted on the server between the failed pass and the next is never served from a kept download', async () => {
    const { h, sync, faces } = await failedFirstSync();
    await h.client.deleteFace(faces[1]!.face_id);
    h.emu.faults.clear();
    h.emu.clearRequests();
    const report = await sync.syncNow();
    expect(report).toMatchObject({ ok: true, added: 5 });
    expect(imageRequests(h.emu)).toBe(1);
    expect(expectIndexMatchesServer(h.facesDir, h.emu).map((e) => e.face_id)).not.toContain(faces[1]!.face_id);
    expect(Object.keys(snapshot(h.facesDir).files).some((f) => f.startsWith(faces[1]!.face_id))).toBe(false);
  });
});
