import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { FREED_IMAGES_JS } from '../helpers/freed-images.js';
import { daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

// The daemon hands glibc's free pages back after full GCs (src/daemon/heap-trim.ts). The trimmer
// runs in a node process of its own with the real addon; gc() (--expose-gc) stands for the full
// GCs V8 runs during and after a burst of work.

const DIST = (rel: string) => JSON.stringify(new URL(`../../dist/${rel}`, import.meta.url).href);

const CHILD = `
import { createHeapTrimmer } from ${DIST('daemon/heap-trim.js')};
import { loadMallocTrim } from ${DIST('util/malloc-trim.js')};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rss = () => Math.round(process.memoryUsage.rss() / 1048576);
const lines = [];
const logger = { debug: (fields, msg) => lines.push({ ...fields, msg }), info() {}, warn() {}, error() {} };
const trimmer = createHeapTrimmer({ trimmer: loadMallocTrim().trim, logger, quietMs: 300, maxWaitMs: 1000 });
trimmer.start();
const out = {};
// A burst: 60 MB of image buffers, freed between small live ones.
${FREED_IMAGES_JS}
gc();
out.afterGc = rss();
await sleep(800);
out.afterTrim = rss();
out.trims1 = trimmer.trims();
// Idle: no GC, no trim.
await sleep(800);
out.trims2 = trimmer.trims();
// Full GCs 100 ms apart: one trim once they stop (300 ms of quiet).
for (let i = 0; i < 4; i++) { gc(); await sleep(100); }
await sleep(600);
out.trims3 = trimmer.trims();
// Full GCs that never stop for 300 ms: one trim within maxWaitMs all the same.
const until = Date.now() + 1500;
while (Date.now() < until) { gc(); await sleep(100); }
out.trims4 = trimmer.trims();
trimmer.stop();
out.log = lines[0];
out.kept = kept.length;
console.log(JSON.stringify(out));
`;

describe('heap trimming after full GCs', () => {
  it('gives a burst\'s freed memory back once the full GCs stop, never when idle, once per quiet spell', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { afterGc: number; afterTrim: number; trims1: number; trims2: number; trims3: number; trims4: number; log: Record<string, unknown> };
    expect(out.trims1).toBe(1);
    expect(out.afterGc).toBeGreaterThan(out.afterTrim + 30);
    expect(out.trims2).toBe(1);
    expect(out.trims3).toBe(2);
    expect(out.trims4).toBeGreaterThanOrEqual(3);
    expect(out.log).toMatchObject({ msg: 'free heap pages handed back to the kernel after a full GC', released: true });
    expect(out.log.rss_before_mb as number).toBeGreaterThan((out.log.rss_after_mb as number) + 30);
  });

  it('is on in the daemon as built (the addon found from dist/bundle/), with no warning at start', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-trim-d-'), emulator, { logLevel: 'debug' });
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    expect(d.logs().filter((l) => /heap pages/.test(l.msg))).toEqual([]);
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });
});
