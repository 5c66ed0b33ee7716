// The web console's gallery open during a run of syncs, as an enrollment burst into a large group
// makes them (a few a second): what the daemon spends on the page's refreshes.
//   npm run build && node test/bench/console-syncs.mjs      (BENCH_FACES=10000, SYNCS=30, ROUNDS=2)
//   BENCH_MAIN=other/main.js                                 another build (its web assets too)
// The built daemon (as the unit runs it, lib/daemon-run.mjs) with the console on loopback, the
// emulator with BENCH_FACES faces (64 px images), Debian's Chromium (playwright-core). Each round:
//   baseline  the browser on about:blank: SYNCS syncs, one new face in the group before each (so
//             each sync changes the cache), every GAP_MS, through the control socket; then SETTLE_MS;
//   gallery   the same with the gallery (#/faces) open, which refreshes on each sync's event.
// Baseline and gallery alternate. Printed: the daemon's CPU over each (utime + stime from /proc),
// their ratio, the gallery's cost per sync (the difference), how many times the page asked for the
// list, and whether the gallery showed every face at the end (nothing stale).
// Target (r42, the web page's refresh spacing): the gallery adds at most a fifth to the daemon's
// CPU over such a run (ratio <= 1.2x).
import { consoleUrl, procCpuMs, spawnDaemon, writeDaemonConfig } from './lib/daemon-run.mjs';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FACES = Number(process.env.BENCH_FACES ?? 10_000);
const SYNCS = Number(process.env.SYNCS ?? 30);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const GAP_MS = Number(process.env.GAP_MS ?? 250);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 12_000);
const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { faceImagePng } = await import(join(ROOT, 'dist/daemon/sample-images.js'));

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-console-syncs-'));
const emulator = await startEmulator({ port: 0 });
const group = emulator.terminals[0].group_id;
const image = (i) => faceImagePng([i % 250, 120, 200 - (i % 200)], 64);
emulator.seedFaces(group, Array.from({ length: FACES }, (_, i) => ({ name: `Person ${i}`, image: image(i) })));
const socket = join(dir, 'ctl.sock');
const config = writeDaemonConfig(dir, emulator, emulator.terminals[0], ['faces:', '  sync_interval: 1h', 'audio:', '  output_device: "null"', '  input_device: "null"', 'console:', '  listen: 127.0.0.1:0', ''].join('\n'), 'info');
const handle = spawnDaemon(dir, config, { stdout: 'pipe' });
const base = await consoleUrl(handle.child);

function control(method, path) {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, method, path }, (res) => {
      let s = '';
      res.on('data', (b) => (s += b));
      res.on('end', () => resolve({ status: res.statusCode, json: () => JSON.parse(s) }));
    });
    req.on('error', reject);
    req.end();
  });
}
let added = 0;
for (let i = 0; i < 600 && (await control('GET', '/status')).json().faces.cached !== FACES; i++) await sleep(100);
if ((await control('GET', '/status')).json().faces.cached !== FACES) throw new Error(`the first sync did not cache the ${FACES} faces`);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'] });
const page = await (await browser.newContext()).newPage();
let asks = 0;
page.on('request', (r) => {
  if (new URL(r.url()).pathname === '/api/faces') asks++;
});

/** SYNCS syncs, a new face before each; the daemon's CPU from the first to SETTLE_MS after the last. */
async function storm() {
  const cpu0 = procCpuMs(handle.pid);
  const asks0 = asks;
  const t0 = performance.now();
  for (let i = 0; i < SYNCS; i++) {
    emulator.seedFaces(group, [{ name: `Burst ${added}`, image: image(FACES + added) }]);
    added++;
    const r = await control('POST', '/faces/sync');
    if (r.status !== 200) throw new Error(`POST /faces/sync: ${r.status}`);
    await sleep(GAP_MS);
  }
  const stormMs = performance.now() - t0;
  await sleep(SETTLE_MS);
  return { cpuMs: procCpuMs(handle.pid) - cpu0, asks: asks - asks0, stormMs };
}

const rows = [];
for (let round = 1; round <= ROUNDS; round++) {
  await page.goto('about:blank');
  const a = await storm();
  await page.goto(`${base}#/faces`);
  await page.locator('[data-ready=faces]').waitFor({ timeout: 60_000 });
  await sleep(3000); // its first list asked and drawn
  const b = await storm();
  const shown = await page.locator('[data-testid=freshness]').innerText().catch(() => '');
  const want = FACES + added;
  const fresh = shown.startsWith(`${want} faces`);
  rows.push({ a, b, fresh, shown });
  console.log(`round ${round}: baseline ${a.cpuMs.toFixed(0)} ms of the daemon's CPU (${SYNCS} syncs in ${(a.stormMs / 1000).toFixed(1)} s); ` +
    `gallery open ${b.cpuMs.toFixed(0)} ms, ${b.asks} asks for the list: ${(b.cpuMs / a.cpuMs).toFixed(2)}x, ` +
    `${((b.cpuMs - a.cpuMs) / SYNCS).toFixed(1)} ms per sync; the gallery at the end: ${fresh ? 'every face' : `STALE (${shown})`}`);
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const ratio = median(rows.map((r) => r.b.cpuMs / r.a.cpuMs));
console.log(`\n${FACES} faces, ${SYNCS} syncs every ${GAP_MS} ms + ${SETTLE_MS} ms: the daemon's CPU with the gallery open ${ratio.toFixed(2)}x the baseline's (median of ${ROUNDS}), ` +
  `the list asked ${median(rows.map((r) => r.b.asks))} times (median), ${((median(rows.map((r) => r.b.cpuMs - r.a.cpuMs))) / SYNCS).toFixed(1)} ms per sync; ` +
  `target <= 1.2x: ${ratio <= 1.2 ? 'met' : 'MISSED'}; the gallery current at the end: ${rows.every((r) => r.fresh) ? 'yes' : 'NO'}`);
await browser.close();
handle.child.kill('SIGTERM');
await new Promise((r) => handle.child.once('exit', r));
await emulator.close();
process.exit(0);
