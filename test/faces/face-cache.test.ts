import { describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { indexVersion } from '../../src/faces/cache-files.js';
import { join } from 'node:path';
import { readCachedFaces } from '../../src/faces/read-cache.js';
import { tmpDir } from '../helpers/tmp.js';
import { GROUP, expectIndexMatchesServer, harness, jpeg, png, readIndex, snapshot, writeTemp } from './face-fixtures.js';

// A reader in another process, as the face-recognition program is: it reads index.json over and
// over and opens every file it names, until told to stop; it prints how many reads broke the rules.
const READER = `
const fs = require('node:fs'); const path = require('node:path');
const dir = process.argv[1]; let reads = 0; const problems = [];
let stop = false; process.stdin.on('data', () => { stop = true; }); process.stdin.resume();
(function loop() {
  if (stop) { console.log(JSON.stringify({ reads, problems: problems.slice(0, 5), count: problems.length })); process.exit(0); }
  let text;
  try { text = fs.readFileSync(path.join(dir, 'index.json'), 'utf8'); } catch { return setImmediate(loop); }
  let entries;
  try { entries = JSON.parse(text); } catch (e) { problems.push('index not JSON: ' + e.message); return setImmediate(loop); }
  for (const e of entries) {
    let b;
    try { b = fs.readFileSync(path.join(dir, e.image)); } catch (err) { problems.push('missing ' + e.image); continue; }
    const jpegOk = b[0] === 0xff && b[1] === 0xd8 && b[b.length - 2] === 0xff && b[b.length - 1] === 0xd9;
    const pngOk = b[0] === 0x89 && b.subarray(-8, -4).toString('latin1') === 'IEND';
    if (!jpegOk && !pngOk) problems.push('half-written ' + e.image);
  }
  reads++; if (reads === 1) console.log('ready'); setImmediate(loop);
})();
`;

describe('the face cache on disk', () => {
  it('a restart with an existing cache serves at once, even with the service unreachable', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }]);
    const first = h.make();
    await first.start();
    await first.syncNow();
    await first.stop();
    const before = snapshot(h.facesDir);
    await h.emu.close(); // the service is gone

    const again = h.make();
    expect(again.listCached().map((f) => f.name).sort()).toEqual(['alice', 'bob']); // before start()
    await again.start();
    expect(again.status()).toMatchObject({ faces_cached: 2, last_sync: { ok: true, added: 2 } });
    const failed = await again.syncNow();
    expect(failed.error?.code).toBe('TA_ERR_NETWORK');
    expect(again.listCached()).toHaveLength(2);
    expect(snapshot(h.facesDir)).toEqual(before);
  });

  it('the index a sync writes is byte for byte the one a restart renders from agent.db (same order)', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, Array.from({ length: 40 }, (_, i) => ({ name: `face-${i}`, image: jpeg() })));
    const first = h.make();
    await first.syncNow();
    // Renames and a delete after the first commit: the rows in memory change, as after any sync.
    const listed = await h.client.listFaces();
    await h.client.updateFace(listed[3]!.face_id, { name: 'renamed' });
    await h.client.deleteFace(listed[7]!.face_id);
    expect(await first.syncNow()).toMatchObject({ ok: true, updated: 1, removed: 1 });
    const written = readFileSync(join(h.facesDir, 'index.json'), 'utf8');
    // agent.db's order, as `faces list --cached` and a restart read it.
    const byDb = (h.db.prepare('SELECT face_id FROM faces WHERE image_file IS NOT NULL ORDER BY id, face_id').all() as Array<{ face_id: string }>).map((r) => r.face_id);
    expect(readIndex(h.facesDir).map((e) => e.face_id)).toEqual(byDb);
    expect(first.listCached().map((f) => f.face_id)).toEqual(byDb);
    await first.stop();
    const again = h.make();
    await again.start();
    expect(h.log.lines.some((l) => l.msg === 'face cache ready')).toBe(true);
    expect(readFileSync(join(h.facesDir, 'index.json'), 'utf8')).toBe(written);
    expect(h.log.lines.filter((l) => l.msg === 'face index rewritten from agent.db')).toHaveLength(0);
  });

  it('start-up repair: an image deleted from disk leaves the index at once and is downloaded again', async () => {
    const h = await harness();
    const [alice, bob] = h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }]);
    const first = h.make();
    await first.syncNow();
    await first.stop();
    rmSync(join(h.facesDir, `${alice!.face_id}.jpg`));
    writeFileSync(join(h.facesDir, `.${bob!.face_id}.img.0000.tmp`), 'left by a crash');
    // A pass's index and its version, written side by side and not yet renamed when it died.
    writeFileSync(join(h.facesDir, '.index.json.0badc0de.tmp'), '[]\n');
    writeFileSync(join(h.facesDir, '.index.version.0badc0de.tmp'), '0000000000000000\n');

    const again = h.make();
    await again.start();
    // Before any network: the index no longer names the missing file, and the crash leftover is gone.
    expect(readIndex(h.facesDir).map((e) => e.face_id)).toEqual([bob!.face_id]);
    expect(Object.keys(snapshot(h.facesDir).files).sort()).toEqual([`${bob!.face_id}.jpg`, 'index.json', 'index.version'].sort());
    // index.version is the version of the repaired index, as status reports it.
    expect(readFileSync(join(h.facesDir, 'index.version'), 'utf8').trim()).toBe(again.status().index_version);
    expect(again.status().index_version).toBe(indexVersion(readFileSync(join(h.facesDir, 'index.json'), 'utf8')));
    const report = await again.syncNow(); // joins the sync start() began
    expect(report).toMatchObject({ ok: true, added: 1, image_requests: 1 });
    expect(expectIndexMatchesServer(h.facesDir, h.emu).map((e) => e.name).sort()).toEqual(['alice', 'bob']);
  });

  it('a reader in another process never sees a missing or half-written file while syncs change everything', async () => {
    const h = await harness();
    const faces = h.emu.seedFaces(GROUP, Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, image: jpeg(8_000) })));
    const sync = h.make({ deleteGraceMs: 60_000 }); // the default: readers of the previous index get a minute
    await sync.syncNow();
    const reader = spawn(process.execPath, ['-e', READER, h.facesDir], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    reader.stdout.on('data', (b: Buffer) => { out += b.toString(); });
    // Start changing things only once the reader is reading (a node start-up is slow on a busy machine).
    await vi.waitFor(() => expect(out).toContain('ready'), { timeout: 20_000, interval: 20 });
    const dir = tmpDir();
    for (let round = 0; round < 6; round++) {
      const victim = faces[round]!;
      await h.client.deleteFace(victim.face_id);
      await h.client.createFace({ name: `new${round}`, image: { path: writeTemp(dir, `n${round}.png`, png(8_000)), contentType: 'image/png' } });
      const changed = faces[10 + round]!;
      await h.client.updateFace(changed.face_id, { name: `changed${round}`, image: { path: writeTemp(dir, `c${round}.png`, png(9_000)), contentType: 'image/png' } });
      await sync.refreshFace(changed.face_id);
    }
    reader.stdin.end('stop');
    await new Promise((r) => reader.once('exit', r));
    const result = JSON.parse(out.trim().split('\n').at(-1)!) as { reads: number; count: number; problems: string[] };
    expect(result.problems).toEqual([]);
    expect(result.reads).toBeGreaterThan(10);
    expect(readIndex(h.facesDir)).toHaveLength(20);
    const stale = [faces[0]!, faces[10]!].map((f) => `${f.face_id}.jpg`);
    expect(stale.every((f) => f in snapshot(h.facesDir).files)).toBe(true);

    // Once the grace is over, the next sync deletes the files no index names any more.
    h.clock.now += 60_000;
    await sync.syncNow();
    const files = Object.keys(snapshot(h.facesDir).files);
    expect(files.filter((f) => stale.includes(f))).toEqual([]);
    expect(files.sort()).toEqual([...readIndex(h.facesDir).map((e) => e.image), 'index.json', 'index.version'].sort());
  });

  it('readCachedFaces (faces list --cached) reads agent.db read-only beside the running sync', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const sync = h.make();
    await sync.syncNow();
    const rows = readCachedFaces(h.stateDir);
    expect(rows).toEqual([expect.objectContaining({ name: 'alice', group_id: GROUP, image_path: join(h.facesDir, rows[0]!.image) })]);
    expect(() => readCachedFaces(tmpDir())).toThrow(/no face cache at .*agent\.db/);
  });
});
