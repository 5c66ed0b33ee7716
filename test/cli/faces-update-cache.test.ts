import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliProcess } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';
import { jpeg, png, readIndex } from '../faces/face-fixtures.js';

// `faces update ID IMAGE` (and `faces add`) on this terminal: its own face cache holds the new image
// when the command returns, fetched once, with no re-check of the other faces. The real daemon
// (dist/main.js run) and the CLI as an operator runs it, against the emulator over loopback.

const imageGets = (emu: Awaited<ReturnType<typeof startTestEmulator>>) => emu.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/image'));

describe('faces update and faces add put the new image into this terminal\'s cache at once', () => {
  it('through the running daemon: one GET of that image, no other image asked', async () => {
    const emu = await startTestEmulator();
    const faces = emu.seedFaces(emu.terminals[0]!.group_id, Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, image: jpeg(2000 + i) })));
    const files = daemonFiles(join(tmpDir(), 'daemon'), emu);
    const daemon = spawnDaemon(files.configPath);
    await daemon.waitLog(isReady);
    await daemon.waitLog((l) => l.msg === 'face sync done', 15_000, 'the first face sync');
    const target = faces[2]!;
    const image = png(3000);
    const path = join(files.dir, 'new.png');
    writeFileSync(path, image);
    emu.clearRequests();

    const res = await runCliProcess(['faces', 'update', target.face_id, path, '--config', files.configPath]);

    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(`updated face "f2": ${target.face_id}`);
    const entry = readIndex(join(files.stateDir, 'faces')).find((e) => e.face_id === target.face_id)!;
    expect(entry.image).toBe(`${target.face_id}.png`);
    expect(readFileSync(join(files.stateDir, 'faces', entry.image)).equals(image)).toBe(true);
    expect(imageGets(emu).map((r) => r.path)).toEqual([`/v1/api/faces/${target.face_id}/image`]);

    // A face_id of another type is refused; one that is not 32 hex characters is a refused sync; the daemon goes on.
    const wrongType = await controlRequest(files.socketPath, 'POST', '/faces/sync', { face_id: 5 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.text).toContain('32 hex');
    const notHex = await controlRequest(files.socketPath, 'POST', '/faces/sync', { face_id: '../../etc/passwd' });
    expect(notHex.json()).toMatchObject({ ok: false, error: { message: expect.stringContaining('32 hex characters') } });
    // status tells how far the re-checks have come round the group.
    const status = await runCliProcess(['status', '--json', '--config', files.configPath]);
    expect(JSON.parse(status.stdout).faces.rechecks).toMatchObject({ mode: 'unknown', round_s: 300, oldest_check_age_s: expect.any(Number), budget: { requests_per_minute: 200 } });
    expect((await runCliProcess(['status', '--config', files.configPath])).stdout).toMatch(/^rechecks: {4}oldest check .* ago; no re-check answered yet; a replaced image is in the cache within about 5m0s/m);
    daemon.signal('SIGTERM');
    await daemon.exited;
  });

  it('faces add through the running daemon: the new face is in this terminal\'s cache when the command returns', async () => {
    const emu = await startTestEmulator();
    emu.seedFaces(emu.terminals[0]!.group_id, [{ name: 'ada', image: jpeg(2100) }]);
    const files = daemonFiles(join(tmpDir(), 'daemon-add'), emu);
    const daemon = spawnDaemon(files.configPath);
    await daemon.waitLog(isReady);
    await daemon.waitLog((l) => l.msg === 'face sync done', 15_000, 'the first face sync');
    const image = jpeg(3100);
    const path = join(files.dir, 'eve.jpg');
    writeFileSync(path, image);

    const res = await runCliProcess(['faces', 'add', '--name', 'eve', path, '--json', '--config', files.configPath]);

    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const created = JSON.parse(res.stdout) as { face_id: string };
    const entry = readIndex(join(files.stateDir, 'faces')).find((e) => e.face_id === created.face_id);
    expect(entry).toMatchObject({ name: 'eve' });
    expect(readFileSync(join(files.stateDir, 'faces', entry!.image)).equals(image)).toBe(true);
    const cached = await runCliProcess(['faces', 'list', '--cached', '--config', files.configPath]);
    expect(cached.stdout).toMatch(/^[0-9a-f]{32} +eve /m);
    daemon.signal('SIGTERM');
    await daemon.exited;
  });

  it('with no daemon running, the cache in state_dir is brought up to date by the command itself', async () => {
    const emu = await startTestEmulator();
    const faces = emu.seedFaces(emu.terminals[0]!.group_id, [{ name: 'ada', image: jpeg() }, { name: 'bob', image: jpeg() }]);
    const files = daemonFiles(join(tmpDir(), 'local'), emu);
    const sync = await runCliProcess(['faces', 'sync', '--json', '--config', files.configPath]);
    expect(JSON.parse(sync.stdout)).toMatchObject({ ok: true, via: 'local', added: 2 });
    const image = jpeg(4096);
    const path = join(files.dir, 'ada.jpg');
    writeFileSync(path, image);
    emu.clearRequests();

    const res = await runCliProcess(['faces', 'update', faces[0]!.face_id, path, '--name', 'ada2', '--json', '--config', files.configPath]);

    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout)).toMatchObject({ face_id: faces[0]!.face_id, name: 'ada2' });
    const entry = readIndex(join(files.stateDir, 'faces')).find((e) => e.face_id === faces[0]!.face_id)!;
    expect(entry.name).toBe('ada2');
    expect(readFileSync(join(files.stateDir, 'faces', entry.image)).equals(image)).toBe(true);
    expect(imageGets(emu)).toHaveLength(1);
  });

  it('a cache that cannot be updated is a warning: the update itself succeeded (exit 0)', async () => {
    const emu = await startTestEmulator();
    const [ada] = emu.seedFaces(emu.terminals[0]!.group_id, [{ name: 'ada', image: jpeg() }]);
    const files = daemonFiles(join(tmpDir(), 'broken'), emu);
    expect((await runCliProcess(['faces', 'sync', '--config', files.configPath])).code).toBe(0);
    writeFileSync(join(files.dir, 'ada.jpg'), jpeg(3000));
    // The image GET fails: the service took the update, the cache cannot follow yet.
    emu.faults.add({ method: 'GET', path: `/v1/api/faces/${ada!.face_id}/image`, action: 'status', status: 404, times: 5 });

    const res = await runCliProcess(['faces', 'update', ada!.face_id, join(files.dir, 'ada.jpg'), '--json', '--config', files.configPath]);

    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ face_id: ada!.face_id });
    expect(JSON.parse(res.stderr.trim())).toMatchObject({ code: 'TA_WARN_CACHE_NOT_UPDATED', face_id: ada!.face_id });
  });
});
