import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

describe('SIGTERM while uploads are in flight', () => {
  it('exits 0 in time, and after a restart every file is uploaded exactly once', async () => {
    const emulator = await startTestEmulator();
    // A slow service: each face upload takes 1.5 s, so SIGTERM lands while several are in flight.
    emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'delay', delayMs: 1500, times: Infinity });
    const files = daemonFiles(tmpDir('ta-drain-'), emulator);
    const names = Array.from({ length: 8 }, (_, i) => `person-${i}`);
    mkdirSync(join(files.enrollDir, 'faces'), { recursive: true });
    names.forEach((n, i) => writeFileSync(join(files.enrollDir, 'faces', `${n}.png`), faceImagePng([i * 30, 100, 200 - i * 20])));

    const first = spawnDaemon(files.configPath);
    await first.waitLog(isReady);
    const posts = () => emulator.requests.filter((r) => r.method === 'POST' && r.path === '/v1/api/faces');
    await first.waitLog(() => posts().length >= 2, 15_000, 'uploads in flight');
    const t0 = Date.now();
    first.signal('SIGTERM');
    expect((await first.exited).code, `${first.stdout().slice(-3000)}\n${first.stderr().slice(-3000)}`).toBe(0);
    expect(Date.now() - t0).toBeLessThan(25_000);

    emulator.faults.clear();
    const second = spawnDaemon(files.configPath);
    await second.waitLog(isReady);
    const done = join(files.enrollDir, 'done', 'faces');
    await second.waitLog(() => {
      try {
        return readdirSync(done).filter((f) => f.endsWith('.png')).length === names.length;
      } catch {
        return false;
      }
    }, 30_000, 'all files in done/faces');
    const created = emulator.state.faces(emulator.terminals[0]!.group_id).map((f) => f.name).sort();
    expect(created).toEqual([...names].sort());
    expect(readdirSync(join(files.enrollDir, 'faces'))).toEqual([]);
    second.signal('SIGTERM');
    // On failure, show the end of the log: which component did not stop in time.
    expect((await second.exited).code, `${second.stdout().slice(-3000)}\n${second.stderr().slice(-3000)}`).toBe(0);
    // A full run with uploads, retries and a shutdown: no secret anywhere in either log.
    for (const out of [first.stdout() + first.stderr(), second.stdout() + second.stderr()]) {
      expect(out).not.toContain(emulator.terminals[0]!.terminal_secret);
      expect(out).not.toContain(emulator.apiKey);
    }
  });
});
