// Web console server benchmark: response times of the pages' requests against the built daemon
// (`node dist/main.js run`, console on loopback) and the emulator, with 200 cached faces.
//   npm run build && node test/bench/console.mjs          (ROUNDS=30 by default)
//   BENCH_FACES=10000 node test/bench/console.mjs         a large group (each face's image 64 px then)
//   BENCH_MAIN=other/main.js                              another build of the daemon (an A/B of two trees)
// The daemon runs as the unit runs it (its node flags and environment, lib/daemon-run.mjs).
//   BENCH_NODE_ARGS="--trace-gc" BENCH_DAEMON_LOG=FILE    node flags for the daemon; its output kept in FILE
// Each request kind is timed ROUNDS times in two phases of the same run and the same daemon:
//   baseline   the daemon unconfined (this machine's cores, shared with whatever else runs)
//   1/4 core   the daemon moved into a CPU cgroup with a quota of 25 ms per 100 ms (cgroup v2
//              cpu.max "25000 100000", else v1 cpu.cfs_quota_us=25000): a Pi-class budget.
// Baseline and confined rounds alternate (the daemon is moved in and out of the cgroup), so both
// see the same load from other jobs.
// "first screen" = what the Overview and the gallery's first screen fetch, 6 at a time like a
// browser: session, status, faces, then 24 thumbnails. Thumbnails are timed cold (made from the
// 320 px originals) and warm (from the disk cache). Figures: median and p90 in ms, and the ratio
// of the 1/4-core median to the baseline median; and the daemon's CPU per request (utime + stime,
// its children's included, from /proc over the unconfined rounds of each kind: in 10 ms ticks, so
// read it over many rounds).
import { consoleUrl, procCpuMs, procPeakRssMb, procRssMb, spawnDaemon, writeDaemonConfig } from './lib/daemon-run.mjs';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 30);
const FACES = Number(process.env.BENCH_FACES ?? 200);
const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { faceImagePng } = await import(join(ROOT, 'dist/daemon/sample-images.js'));

function quarterCore(pid) {
  const name = `ta-bench-console-api-${process.pid}`;
  const kinds = [
    ['/sys/fs/cgroup', (d) => writeFileSync(join(d, 'cpu.max'), '25000 100000')],
    ['/sys/fs/cgroup/cpu', (d) => writeFileSync(join(d, 'cpu.cfs_quota_us'), '25000')],
  ];
  for (const [root, limit] of kinds) {
    const d = join(root, name);
    if (!existsSync(join(root, 'cgroup.procs'))) continue;
    try {
      mkdirSync(d);
      limit(d);
      writeFileSync(join(d, 'cgroup.procs'), String(pid));
      if (readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(name)) {
        return {
          how: `${d} (quota 25000/100000 us)`,
          in: () => writeFileSync(join(d, 'cgroup.procs'), String(pid)),
          out: () => writeFileSync(join(root, 'cgroup.procs'), String(pid)),
          undo: () => rmdirSync(d),
        };
      }
    } catch (err) {
      console.log(`no CPU cgroup at ${d}: ${err.message}`);
    }
    try {
      rmdirSync(d);
    } catch {
      // not made
    }
  }
  return undefined;
}

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-console-api-'));
const emulator = await startEmulator({ port: 0 });
emulator.seedFaces(emulator.terminals[0].group_id, Array.from({ length: FACES }, (_, i) => ({ name: `Person ${i}`, image: faceImagePng([i % 250, 120, 200 - (i % 200)], FACES > 1000 ? 64 : 320) })));
const config = writeDaemonConfig(dir, emulator, emulator.terminals[0], ['audio:', '  output_device: "null"', '  input_device: "null"', 'console:', '  listen: 127.0.0.1:0', ''].join('\n'), 'info');

// As the unit runs it (its node flags and environment: lib/daemon-run.mjs).
const handle = spawnDaemon(dir, config, { stdout: 'pipe' });
const daemon = { child: handle.child, pid: handle.pid };
let out = '';
daemon.child.stdout.on('data', (b) => (out += b));
const base = await consoleUrl(daemon.child);

let cookie = '';
function get(path, headers = {}) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { headers: { cookie, 'accept-encoding': 'gzip', ...headers } }, (res) => {
      let n = 0;
      res.on('data', (b) => (n += b.length));
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0, bytes: n, res }));
    });
    req.on('error', reject);
    req.end();
  });
}
const session = await get('/api/session');
cookie = String(session.res.headers['set-cookie']).split(';')[0];
let faces;
for (let i = 0; i < 300 + FACES / 10; i++) {
  faces = JSON.parse(await new Promise((resolve) => request(new URL('/api/faces', base), { headers: { cookie } }, (r) => {
    let s = '';
    r.on('data', (b) => (s += b));
    r.on('end', () => resolve(s));
  }).end()));
  if (faces.total === FACES) break;
  await sleep(100);
}
if (faces.total !== FACES) throw new Error(`only ${faces.total} faces synced`);
const thumbs = faces.faces.slice(0, 24).map((f) => f.thumb_url);
const thumbDir = join(dir, 'state', 'console', 'thumbs');

const daemonCpuMs = () => procCpuMs(daemon.pid);
/** CPU ms of the daemon over each kind's unconfined rounds. */
const cpu = {};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.9) - 1)];

async function parallel(paths, width = 6) {
  const queue = [...paths];
  await Promise.all(Array.from({ length: width }, async () => {
    for (let p = queue.shift(); p; p = queue.shift()) {
      const r = await get(p);
      if (r.status !== 200) throw new Error(`${p}: ${r.status}`);
    }
  }));
}

async function firstScreen() {
  const t0 = performance.now();
  await Promise.all([get('/api/session'), get('/api/status'), get('/api/faces')]);
  await parallel(thumbs);
  return performance.now() - t0;
}

function clearThumbs() {
  for (const n of existsSync(thumbDir) ? readdirSync(thumbDir) : []) rmSync(join(thumbDir, n));
}

const kinds = {
  'GET / (gzip)': () => get('/'),
  'GET /assets/app.js (gzip)': () => get('/assets/app.js?v=1'),
  'GET /api/status': () => get('/api/status'),
  [`GET /api/faces (${FACES} faces)`]: () => get('/api/faces'),
  'GET /api/faces?q=person 1': () => get('/api/faces?q=person%201'),
  'GET /api/enroll': () => get('/api/enroll'),
  'GET thumb (warm)': () => get(thumbs[0]),
};

// Baseline and confined rounds alternate, so that both see the same load from other jobs on this
// shared machine: each round runs once outside the cgroup, then once inside it.
async function measure(cg) {
  const b = {};
  const c = {};
  const both = async (k, fn) => {
    b[k] ??= [];
    c[k] ??= [];
    cg?.out();
    const cpu0 = daemonCpuMs();
    b[k].push(await fn());
    cpu[k] = (cpu[k] ?? 0) + daemonCpuMs() - cpu0;
    if (cg) {
      cg.in();
      c[k].push(await fn());
    }
  };
  for (const [k, fn] of Object.entries(kinds)) {
    await fn();
    for (let i = 0; i < ROUNDS; i++) await both(k, async () => (await fn()).ms);
  }
  for (let i = 0; i < Math.max(3, Math.floor(ROUNDS / 6)); i++) {
    await both('first screen, 24 thumbs cold', async () => {
      clearThumbs();
      return firstScreen();
    });
    await both('first screen, 24 thumbs warm', firstScreen);
  }
  cg?.out();
  return [b, cg ? c : undefined];
}

console.log(`daemon pid ${daemon.pid}, ${FACES} faces, ${ROUNDS} rounds; the machine is shared with other jobs, so read the ratios`);
const cg = quarterCore(daemon.pid);
if (cg) console.log(`confined rounds: ${cg.how}`);
else console.log('could not confine the daemon to 1/4 core here (no writable CPU cgroup): baseline only');
const [baseline, confined] = await measure(cg);

console.log(`\n${'request'.padEnd(32)} ${'baseline med / p90'.padStart(20)} ${'1/4 core med / p90'.padStart(20)} ${'ratio'.padStart(7)} ${'CPU ms/req'.padStart(11)}`);
for (const k of Object.keys(baseline)) {
  const b = baseline[k];
  const c = confined?.[k];
  const f = (xs) => (xs ? `${median(xs).toFixed(1)} / ${p90(xs).toFixed(1)}` : '-');
  console.log(`${k.padEnd(32)} ${f(b).padStart(20)} ${f(c).padStart(20)} ${(c ? (median(c) / median(b)).toFixed(1) + 'x' : '-').padStart(7)} ${(cpu[k] / b.length).toFixed(2).padStart(11)}`);
}
console.log(`\nthe daemon's peak RSS ${procPeakRssMb(daemon.pid).toFixed(1)} MB, RSS at the end ${procRssMb(daemon.pid).toFixed(1)} MB`);
await handle.stop();
if (process.env.BENCH_DAEMON_LOG) writeFileSync(process.env.BENCH_DAEMON_LOG, out);
cg?.undo();
await emulator.close();
rmSync(dir, { recursive: true, force: true });
