// Web console benchmark: time until the first page (Overview) is interactive, from navigation to
// the status on screen (the page's `console-interactive` performance mark), in a fresh browser
// profile each round (no cached assets), against the built daemon with the emulator.
//   npm run build && node test/bench/console-page.mjs        (ROUNDS=7, QUOTA_US=25000 by default)
// Each row alternates rounds with the daemon unconfined (the baseline: this machine's full cores) and
// with it in a CPU cgroup that gets 25 ms per 100 ms (a Pi-class budget), so both see the same load:
//   no added latency
//   + 100 ms round trip                    a phone on Wi-Fi (Chromium's network emulation)
//   + 100 ms, browser CPU x4 slower        a cheap phone (Chromium's CPU throttling)
// Target: under 1000 ms on the 1/4-core rows. The browser is not confined: it runs on the
// operator's phone or laptop, not on the terminal.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { consoleUrl, writeDaemonConfig } from './lib/daemon-run.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 7);
// CPU per 100 ms the confined daemon gets; QUOTA_US=6250 is about a quarter of a Pi 4 core, if one of
// its cores does a quarter of the work of one core of a desktop of these years.
const QUOTA_US = Number(process.env.QUOTA_US ?? 25_000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { faceImagePng } = await import(join(ROOT, 'dist/daemon/sample-images.js'));

/**
 * A CPU cgroup limited to `quotaUs` per 100 ms (cgroup v2 cpu.max, else v1's cfs quota) that `pid` can be
 * moved into and out of, so that confined and unconfined rounds alternate under the same machine load.
 */
function cpuCgroup(pid, quotaUs) {
  const name = `ta-bench-console-${process.pid}`;
  const tries = [
    { root: '/sys/fs/cgroup', write: (d) => writeFileSync(join(d, 'cpu.max'), `${quotaUs} 100000`) },
    { root: '/sys/fs/cgroup/cpu', write: (d) => { writeFileSync(join(d, 'cpu.cfs_period_us'), '100000'); writeFileSync(join(d, 'cpu.cfs_quota_us'), String(quotaUs)); } },
  ];
  for (const t of tries) {
    const dir = join(t.root, name);
    try {
      mkdirSync(dir);
    } catch {
      continue;
    }
    try {
      // A plain folder (a tmpfs where cgroup v2 is not mounted) is no cgroup: its files do nothing.
      if (!existsSync(join(dir, 'cgroup.procs'))) throw new Error('not a cgroup file system');
      t.write(dir);
      const move = (to) => {
        writeFileSync(join(to, 'cgroup.procs'), String(pid));
        if (readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(name) !== (to === dir)) throw new Error('the process did not move');
      };
      move(dir);
      move(t.root);
      return {
        how: dir,
        enter: () => move(dir),
        leave: () => move(t.root),
        stat: () => { try { return readFileSync(join(dir, 'cpu.stat'), 'utf8').trim().replace(/\n/g, ', '); } catch { return ''; } },
        release: () => { try { rmdirSync(dir); } catch { /* still has the process */ } },
      };
    } catch (err) {
      try { rmdirSync(dir); } catch { rmSync(dir, { recursive: true, force: true }); }
      console.log(`(cgroup at ${dir} not usable: ${err.message})`);
    }
  }
  return undefined;
}

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-console-'));
const emulator = await startEmulator({ port: 0 });
const group = emulator.terminals[0].group_id;
emulator.seedFaces(group, Array.from({ length: 40 }, (_, i) => ({ name: `Person ${i}`, image: faceImagePng([i * 5, 120, 200 - i * 4], 320) })));
const config = writeDaemonConfig(dir, emulator, emulator.terminals[0], `audio:
  output_device: "null"
  input_device: "null"
console:
  listen: 127.0.0.1:0
`, 'info');

const daemon = spawn(process.execPath, [MAIN, 'run', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
const url = await consoleUrl(daemon);
await sleep(1500); // the first face sync

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

async function once({ latencyMs = 0, cpuSlowdown = 1 }) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  if (latencyMs) await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: latencyMs, downloadThroughput: -1, uploadThroughput: -1 });
  if (cpuSlowdown > 1) await cdp.send('Emulation.setCPUThrottlingRate', { rate: cpuSlowdown });
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForSelector('[data-ready=overview]', { timeout: 30_000 });
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const ready = performance.getEntriesByName('console-interactive')[0];
    return { interactive: ready?.startTime ?? NaN, fcp: fcp?.startTime ?? NaN, dcl: nav?.domContentLoadedEventEnd ?? NaN };
  });
  await context.close();
  return t;
}

function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, USER_HZ 100
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.9) - 1)];

const fmt = (runs) => {
  const i = runs.map((x) => x.interactive);
  return `${median(i).toFixed(0).padStart(5)} ms (p90 ${p90(i).toFixed(0).padStart(5)}, first paint ${median(runs.map((x) => x.fcp)).toFixed(0).padStart(4)})`;
};

/** ROUNDS pairs for one condition: unconfined and confined alternate, so both see the same machine load. */
async function pair(label, opts, cg) {
  await once(opts); // warm the daemon's own caches (assets read once, gzipped once)
  const free = [];
  const quarter = [];
  let cpu = 0;
  for (let i = 0; i < ROUNDS; i++) {
    cg.leave();
    free.push(await once(opts));
    cg.enter();
    const c0 = cpuMs(daemon.pid);
    quarter.push(await once(opts));
    cpu += cpuMs(daemon.pid) - c0;
  }
  cg.leave();
  const ratio = median(quarter.map((x) => x.interactive)) / median(free.map((x) => x.interactive));
  console.log(`${label.padEnd(34)} unconfined ${fmt(free)}   confined ${fmt(quarter)}   ratio ${ratio.toFixed(2)}x   daemon CPU ${(cpu / ROUNDS).toFixed(0)} ms/load`);
  return median(quarter.map((x) => x.interactive));
}

const assets = ['index.html', 'assets/app.js', 'assets/app.css'].map((f) => {
  const b = readFileSync(join(ROOT, 'dist/web', f));
  return `${f} ${(statSync(join(ROOT, 'dist/web', f)).size / 1024).toFixed(1)} KiB (${(gzipSync(b, { level: 9 }).length / 1024).toFixed(1)} KiB gzipped)`;
});
console.log(`assets: ${assets.join(', ')}`);
console.log(`rounds: ${ROUNDS} pairs per row, a fresh browser context each (nothing cached), phone viewport; medians`);

let release;
try {
  const cg = cpuCgroup(daemon.pid, QUOTA_US);
  if (!cg) throw new Error('no writable CPU cgroup (v2 cpu.max or v1 cpu.cfs_quota_us): the daemon cannot be confined here; run as root on a machine with cgroups');
  release = cg.release;
  console.log(`daemon moves in and out of ${cg.how} (${QUOTA_US / 1000} ms of CPU per 100 ms) between rounds`);
  const plain = await pair('no added latency', {}, cg);
  const slowNet = await pair('+100 ms round trip', { latencyMs: 100 }, cg);
  await pair('+100 ms, browser CPU x4 slower', { latencyMs: 100, cpuSlowdown: 4 }, cg);
  console.log(`cgroup cpu.stat: ${cg.stat()}`);
  const worst = Math.max(plain, slowNet);
  console.log(`target: first page interactive under 1000 ms with the daemon confined: ${worst < 1000 ? 'met' : 'MISSED'} (${worst.toFixed(0)} ms)`);
} finally {
  await browser.close();
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('close', r));
  release?.();
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
}
