import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { FREED_IMAGES_JS } from '../helpers/freed-images.js';
import { CLI_ENTRY } from '../helpers/cli.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

// The daemon hands glibc's free pages back after full GCs (src/daemon/heap-trim.ts). The trimmer
// runs in a node process of its own with the real addon; gc() (--expose-gc) stands for the full
// GCs V8 runs during and after a burst of work.

const DIST = (rel: string) => JSON.stringify(new URL(`../../dist/${rel}`, import.meta.url).href);

// Both child scripts: the trimmer with the real addon, a logger that keeps its debug lines.
const PRELUDE = `
import { createHeapTrimmer } from ${DIST('daemon/heap-trim.js')};
import { loadMallocTrim } from ${DIST('util/malloc-trim.js')};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const lines = [];
const logger = { debug: (fields, msg) => lines.push({ ...fields, msg }), info() {}, warn() {}, error() {} };
`;

const CHILD = `${PRELUDE}
const rss = () => Math.round(process.memoryUsage.rss() / 1048576);
const released = [];
const trimmer = createHeapTrimmer({ trimmer: loadMallocTrim().trim, logger, onTrim: (bytes) => released.push(bytes), quietMs: 300, maxWaitMs: 1000, settleMs: 60_000 });
trimmer.start();
const out = {};
const trims = () => lines.filter((l) => l.msg.startsWith('free heap pages')).length;
// A burst: 60 MB of image buffers, freed between small live ones.
${FREED_IMAGES_JS}
gc();
out.afterGc = rss();
await sleep(800);
out.afterTrim = rss();
out.trims1 = trims();
// Idle: no GC, no trim.
await sleep(800);
out.trims2 = trims();
// Full GCs 100 ms apart: one trim once they stop (300 ms of quiet).
for (let i = 0; i < 4; i++) { gc(); await sleep(100); }
await sleep(600);
out.trims3 = trims();
// Full GCs that never stop for 300 ms: one trim within maxWaitMs all the same.
const until = Date.now() + 1500;
while (Date.now() < until) { gc(); await sleep(100); }
out.trims4 = trims();
trimmer.stop();
out.log = lines[0];
out.released = released;
out.kept = kept.length;
console.log(JSON.stringify(out));
`;

// node's own pages: released once after start-up (settleMs), with the first trim of a burst, and
// then at most every nodePagesEveryMs however often the trims come.
const NODE_PAGES_CHILD = `${PRELUDE}
const releases = () => lines.filter((l) => l.msg.startsWith("node's own pages"));
const counted = [];
const trimmer = createHeapTrimmer({ trimmer: loadMallocTrim().trim, logger, onNodePages: (b) => counted.push(b), quietMs: 100, maxWaitMs: 500, settleMs: 400, nodePagesEveryMs: 3000 });
const out = { rssStart: process.memoryUsage.rss() / 1048576 };
trimmer.start();
await sleep(200);
out.beforeSettle = releases().length;
await sleep(400);
out.afterSettle = releases().length;
out.rssAfterSettle = process.memoryUsage.rss() / 1048576;
// Trims 300 ms apart for 1.5 s: none of them within 3 s of the settle's release releases again.
for (let i = 0; i < 5; i++) { gc(); await sleep(300); }
out.soon = releases().length;
out.trimsSoon = lines.filter((l) => l.msg.startsWith('free heap pages')).length;
// Past 3 s since it: the next trim releases (node hands GC entries to observers up to a second late).
await sleep(1500);
gc();
for (let i = 0; i < 30 && releases().length < 2; i++) await sleep(100);
out.later = releases().length;
trimmer.stop();
out.first = releases()[0];
out.counted = counted;
console.log(JSON.stringify(out));
`;

describe('heap trimming after full GCs', () => {
  it('unmaps node\'s own start-up pages once start-up has settled, then at most once per spacing with the trims', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', NODE_PAGES_CHILD], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as {
      rssStart: number; beforeSettle: number; afterSettle: number; rssAfterSettle: number; soon: number; trimsSoon: number; later: number;
      first: { advised_mb: number; rss_before_mb: number; rss_after_mb: number }; counted: number[];
    };
    expect(out.beforeSettle).toBe(0);
    expect(out.afterSettle).toBe(1);
    expect(out.first.advised_mb).toBeGreaterThan(40);
    expect(out.first.rss_before_mb - out.first.rss_after_mb).toBeGreaterThan(10);
    expect(out.rssStart - out.rssAfterSettle).toBeGreaterThan(10);
    expect(out.trimsSoon).toBeGreaterThanOrEqual(3);
    expect(out.soon).toBe(1);
    expect(out.later).toBe(2);
    // What the metric counts: the resident bytes each release gave back, as its log line says.
    expect(out.counted).toHaveLength(2);
    expect(out.counted[0]! / 1048576).toBeCloseTo(out.first.rss_before_mb - out.first.rss_after_mb, 0);
  });

  it('gives a burst\'s freed memory back once the full GCs stop, never when idle, once per quiet spell', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { afterGc: number; afterTrim: number; trims1: number; trims2: number; trims3: number; trims4: number; log: Record<string, unknown>; released: number[] };
    expect(out.trims1).toBe(1);
    expect(out.afterGc).toBeGreaterThan(out.afterTrim + 30);
    expect(out.trims2).toBe(1);
    expect(out.trims3).toBe(2);
    expect(out.trims4).toBeGreaterThanOrEqual(3);
    expect(out.log).toMatchObject({ msg: 'free heap pages handed back to the kernel after a full GC', released: true });
    expect(out.log.rss_before_mb as number).toBeGreaterThan((out.log.rss_after_mb as number) + 30);
    // What the metrics count: one call per trim (each logs its line), the first with the burst's 30+ MB.
    expect(out.released).toHaveLength(out.trims4);
    expect(out.released[0]).toBeGreaterThan(30 * 1048576);
    expect(out.released.every((b) => b >= 0)).toBe(true);
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

  it('counts the daemon\'s trims and the bytes they gave back in /metrics', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-trim-m-'), emulator, { logLevel: 'debug' });
    const scraped = async () => (await controlRequest(files.socketPath, 'GET', '/metrics')).text;
    const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    // --gc-global makes every GC V8 runs a full one (V8's own test flag, in node's release build):
    // the scrapes below allocate until a scavenge comes, which is then a full GC and a trim.
    const d = spawnDaemon(files.configPath, {}, [CLI_ENTRY, 'run'], undefined, '--gc-global');
    await d.waitLog(isReady);
    const isTrim = (l: { msg: string }) => /^free heap pages handed back/.test(l.msg);
    for (const t0 = Date.now(); !d.logs().some(isTrim) && Date.now() - t0 < 15_000; ) {
      await scraped();
      await new Promise((r) => setTimeout(r, 50));
    }
    await d.waitLog(isTrim, 1, 'a heap trim');
    // The control socket computes /metrics at most once a second, and a GC of the last scrapes would
    // trim a second later: after 1.5 s of quiet the next scrape counts every trim logged so far.
    await new Promise((r) => setTimeout(r, 1_500));
    const text = await scraped();
    const logged = d.logs().filter(isTrim) as unknown as Array<{ rss_before_mb: number; rss_after_mb: number }>;
    expect(value(text, 'terminal_agent_heap_trims_total')).toBe(logged.length);
    // The bytes are the RSS each trim gave back, which its log line gives to 0.1 MB.
    const loggedMb = logged.reduce((sum, l) => sum + Math.max(0, l.rss_before_mb - l.rss_after_mb), 0);
    expect(Math.abs(value(text, 'terminal_agent_heap_trim_released_bytes_total') / 1048576 - loggedMb)).toBeLessThanOrEqual(0.1 * logged.length + 0.01);
    expect(text).toMatch(/^# HELP terminal_agent_heap_trim_released_bytes_total .*bytes/m);
    // The first trim also unmapped node's start-up pages: tens of MB, as its own line says.
    const releases = d.logs().filter((l) => l.msg.startsWith("node's own pages")) as unknown as Array<{ rss_before_mb: number; rss_after_mb: number }>;
    // (A second comes from the settle timer, 15 s after start, should this test run that long.)
    expect(releases.length).toBeGreaterThanOrEqual(1);
    expect(releases[0]!.rss_before_mb - releases[0]!.rss_after_mb).toBeGreaterThan(10);
    const releasedMb = releases.reduce((sum, l) => sum + Math.max(0, l.rss_before_mb - l.rss_after_mb), 0);
    expect(Math.abs(value(text, 'terminal_agent_node_pages_released_bytes_total') / 1048576 - releasedMb)).toBeLessThanOrEqual(0.1 * releases.length + 0.01);
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);

    // Without the flag, nothing has been trimmed at start: the counters are there, at 0.
    const files2 = daemonFiles(tmpDir('ta-trim-m2-'), emulator);
    const d2 = spawnDaemon(files2.configPath);
    await d2.waitLog(isReady);
    const text2 = (await controlRequest(files2.socketPath, 'GET', '/metrics')).text;
    expect(value(text2, 'terminal_agent_heap_trims_total')).toBe(0);
    expect(value(text2, 'terminal_agent_heap_trim_released_bytes_total')).toBe(0);
    expect(value(text2, 'terminal_agent_node_pages_released_bytes_total')).toBe(0);
    d2.signal('SIGTERM');
    expect((await d2.exited).code).toBe(0);
  }, 30_000);
});
