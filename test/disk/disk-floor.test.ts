import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, statfsSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { onTestFinished } from 'vitest';
import { startTestEmulator } from '../helpers/emulator.js';
import { runCliProcess } from '../helpers/cli.js';
import { mountTmpfs, tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';
import { jpeg } from '../faces/face-fixtures.js';
import { openDatabase } from '../../src/db/database.js';
import { createTtsCache } from '../../src/audio/tts-cache.js';
import { createDiskFloor, minFreeBytes } from '../../src/disk/disk-floor.js';
import { silentLogger } from '../../src/log/logger.js';
import { writeWav } from '../client/fixtures.js';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';

// state_dir on a small tmpfs (mounted here; the tests run as root, as CI does): the caches stop at
// the state_min_free floor, a face sync that does not fit stops and gives its space back, status,
// doctor and /metrics say "disk nearly full", and enrollment goes on while the outbox can commit.

const MB = 1024 * 1024;

function smallFs(sizeMb: number): string {
  return mountTmpfs(tmpDir('ta-tmpfs-'), sizeMb);
}

const freeBytes = (dir: string) => {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
};

/** Leaves about `leave` bytes free on the file system of `dir` with one filler file. */
function fillUntil(dir: string, leave: number): void {
  const size = freeBytes(dir) - leave;
  if (size > 0) writeFileSync(join(dir, `filler-${Date.now()}-${Math.random()}.bin`), Buffer.alloc(size));
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('state_min_free', () => {
  it('auto is the larger of 64 MiB and 5 % of the file system', () => {
    expect(minFreeBytes('auto', 100 * MB)).toBe(64 * MB);
    expect(minFreeBytes('auto', 10_000 * MB)).toBe(500 * MB);
    expect(minFreeBytes('auto', 250_000 * MB)).toBe(1024 * MB); // capped: 5 % of a large disk is far more than agent.db needs
    expect(minFreeBytes({ percent: 10 }, 100 * MB)).toBe(10 * MB);
    expect(minFreeBytes({ bytes: 3 * MB }, 100 * MB)).toBe(3 * MB);
  });
});

describe('a small state_dir', () => {
  it('a face sync that does not fit stops at the floor, keeps only finished downloads and does not fetch them again; enrollment goes on; status, doctor and /metrics say disk nearly full', { timeout: 90_000 }, async () => {
    const emulator = await startTestEmulator();
    // Twenty 1 MB faces do not fit in 16 MB with 3 MB kept free.
    emulator.seedFaces(emulator.terminals[0]!.group_id, Array.from({ length: 20 }, (_, i) => ({ name: `big${i}`, image: jpeg(MB) })));
    const dir = tmpDir('ta-disk-');
    const files = daemonFiles(dir, emulator, { extra: 'state_min_free: 3MB\n' });
    mkdirSync(files.stateDir, { recursive: true });
    mountTmpfs(files.stateDir, 16);
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    const failed = await d.waitLog((l) => l.component === 'faces' && /face sync failed/.test(l.msg), 30_000, 'the face sync to fail');
    expect(failed, JSON.stringify(failed)).toMatchObject({ err_code: 'TA_ERR_DISK_FULL' });
    expect(failed.msg).toMatch(/disk nearly full: [\d.]+MB free on the file system of .*state; face image downloads need [\d.]+[KM]B more, and the agent keeps 3\.0MB free \(state_min_free\) for agent.db and the enrollment outbox, so face image downloads stopped/);
    // It stopped cleanly: the floor is still free, no partial download is left, and the finished
    // downloads kept in faces/.staging are recorded for the next pass.
    expect(freeBytes(files.stateDir)).toBeGreaterThanOrEqual(3 * MB);
    const stagingDir = join(files.stateDir, 'faces', '.staging');
    const kept = () => (existsSync(stagingDir) ? readdirSync(stagingDir).sort() : []);
    const recorded = () => {
      const db = new Database(join(files.stateDir, 'agent.db'), { readonly: true, fileMustExist: true });
      try {
        return (db.prepare('SELECT file FROM face_staging ORDER BY file').all() as Array<{ file: string }>).map((r) => r.file);
      } finally {
        db.close();
      }
    };
    const keptFirst = kept();
    expect(keptFirst.length).toBeGreaterThan(0);
    expect(keptFirst.length).toBeLessThan(20);
    // Parallel downloads shared the room: most finished (8 to 11 on a quiet machine; on a loaded one
    // more are still in flight, holding their reservations, when the floor is reached).
    expect(keptFirst.length).toBeGreaterThanOrEqual(5);
    expect(recorded()).toEqual(keptFirst);
    // The next pass uses them: none of them is downloaded again. (It may finish a few more in
    // the room the aborted partial downloads gave back, then stops at the floor again.)
    const idOf = (file: string) => /^\.([0-9a-f]{32})\.img\./.exec(file)![1]!;
    const requestsBefore = emulator.requests.length;
    const again = await runCliProcess(['faces', 'sync', '--json', '--config', files.configPath]);
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: false, error: { code: 'TA_ERR_DISK_FULL' } });
    const refetched = emulator.requests.slice(requestsBefore).filter((r) => keptFirst.some((f) => r.path.includes(idOf(f))));
    expect(refetched).toEqual([]);
    expect(kept()).toEqual(expect.arrayContaining(keptFirst));
    expect(freeBytes(files.stateDir)).toBeGreaterThanOrEqual(3 * MB);

    // Enrollment works: the outbox commits in agent.db on the small file system.
    mkdirSync(join(files.enrollDir, 'faces'), { recursive: true });
    writeFileSync(join(files.enrollDir, 'faces', 'alice.jpg'), jpeg(20_000));
    await until(() => existsSync(join(files.enrollDir, 'done', 'faces', 'alice.json')), 'alice enrolled');

    // Something else fills the file system below the floor: everyone says so before it is full.
    // (Between two of the daemon's retries: a download in flight would give its bytes back.)
    await until(async () => {
      const s = (await controlRequest(files.socketPath, 'GET', '/status')).json() as { components: { faces: { state: string } } };
      return s.components.faces.state !== 'syncing';
    }, 'the face sync to be idle');
    fillUntil(files.stateDir, 2 * MB);
    const status = await runCliProcess(['status', '--config', files.configPath]);
    expect(status.stdout).toMatch(/disk: +DISK NEARLY FULL: [\d.]+MB free of 16\.0MB on .*, floor 3\.0MB \(state_min_free\)/);
    const doctor = await runCliProcess(['doctor', '--json', '--config', files.configPath], { timeoutMs: 60_000 });
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ check: string; result: string; detail: string }> }).checks;
    expect(checks.find((c) => c.check === 'free space')).toMatchObject({ result: 'fail', detail: expect.stringMatching(/^DISK NEARLY FULL/) });
    const metrics = await controlRequest(files.socketPath, 'GET', '/metrics');
    expect(metrics.text).toMatch(/^terminal_agent_disk_nearly_full 1$/m);
    expect(metrics.text).toMatch(/^terminal_agent_state_min_free_bytes 3145728$/m);

    // Still enrolling with 2 MB left: the outbox needs far less than the floor.
    writeFileSync(join(files.enrollDir, 'faces', 'bob.jpg'), jpeg(20_000));
    await until(() => existsSync(join(files.enrollDir, 'done', 'faces', 'bob.json')), 'bob enrolled');

    d.signal('SIGTERM');
    expect(await d.exited).toEqual({ code: 0, signal: null });
  });

  it('the TTS cache does not grow into the floor: no new entry below it, no commit across it', async () => {
    const fs = smallFs(8);
    const db = openDatabase({ path: join(fs, 'agent.db') });
    onTestFinished(() => { db.close(); });
    const disk = createDiskFloor(fs, { bytes: 3 * MB });
    const cache = createTtsCache({ db, dir: join(fs, 'tts'), maxBytes: 64 * MB, logger: silentLogger(), disk });
    await cache.init();
    expect(cache.writer('a')).toBeDefined(); // ~8 MB free, floor 3 MB + 4 MB headroom
    fillUntil(fs, 5 * MB);
    expect(cache.writer('b')).toBeUndefined(); // a phrase is played but not cached
    const w = createTtsCache({ db, dir: join(fs, 'tts'), maxBytes: 64 * MB, logger: silentLogger() }).writer('c')!;
    fillUntil(fs, 2 * MB);
    const header = { sampleRate: 16000, channels: 1, bitsPerSample: 16, dataBytes: 0 } as never;
    await expect(cache.commit('c', w, header, 0)).rejects.toMatchObject({ code: 'TA_ERR_DISK_FULL' });
    await w.abort();
    expect(cache.stats().entries).toBe(0);
  });

  it('voiceprint register refuses before sending when its audit copy would cross the floor; nothing reaches the service', { timeout: 30_000 }, async () => {
    const emulator = await startTestEmulator();
    const fs = smallFs(8);
    const dir = tmpDir('ta-vp-');
    const wav = writeWav(dir, 'voice.wav', 3);
    const config = join(dir, 'config.yaml');
    writeFileSync(config, [
      'service:', `  base_url: ${emulator.baseUrl}`, `  face_base_url: ${emulator.faceBaseUrl}`,
      `  terminal_secret: "${TEST_TERMINAL_SECRET}"`, `  api_key: "${emulator.apiKey}"`, '  other_auth: api_key', '  retries: 0',
      `state_dir: ${fs}`, 'state_min_free: 3MB', '',
    ].join('\n'));
    fillUntil(fs, 3 * MB + 16 * 1024); // the 96 KB recording does not fit above the floor
    const before = emulator.requests.length;
    const res = await runCliProcess(['voiceprint', 'register', '--name', 'Ada', wav, '--config', config]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/disk nearly full: .* voiceprint audit copies need 9\d\.\dKB more/);
    expect(emulator.requests.length).toBe(before);
    expect(emulator.state.voiceprints()).toEqual([]);
  });
});

