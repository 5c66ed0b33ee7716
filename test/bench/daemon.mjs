// Daemon benchmark: start to READY=1, then idle RSS and CPU over 60 s with every enrollment folder
// watched, next to a bare `node` process measured in the same run (the floor any Node daemon pays).
//   npm run build && node test/bench/daemon.mjs      (STARTS=7, IDLE_SECONDS=60, SETTLE_SECONDS=20, ROUNDS=3 by default; ROUNDS=0 skips the idle part)
// Start to READY is also measured on the "Pi budget" (pi-budget.mjs: a quarter of one core, for the
// daemon and for the bare node it is compared with).
// Targets: start to READY <= 250 ms; idle RSS <= 55 MB, idle CPU <= 0.2 % (issue 11).
// The idle rounds also run a daemon that talks to the emulator over HTTPS (lib/tls-front.mjs), as
// every terminal talks to the cloud: its private CA is given through NODE_EXTRA_CA_CERTS, so the
// daemon trusts node's own roots plus that one, as it does for a cloud with a public certificate.
// Beside them, node's floor: a node that loads the built-in modules the idle daemon has loaded and
// listens on a unix socket, run as the unit runs the daemon: what node itself takes for them (on
// Node 24 about 13 MB over a bare node, on Node 20 about 5), which no code of the agent's changes;
// Memory is reported as VmRSS and as RssAnon (anonymous memory: the heaps; node's binary and other
// file pages, which the kernel can drop and read again, left out): the idle budget is RssAnon.
// And a daemon of a large group (BIG_GROUP faces, default 10,000, 2 KB images, from its own
// emulator): its idle RSS is measured once its first sync is over (its cache holds them all) and
// 15 s have passed, the figure of a terminal with a large group cached. BIG_GROUP=0 skips it.
import { spawn } from 'node:child_process';
import { builtinModules, createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { inCgroup, quarterCoreCgroup } from './pi-budget.mjs';
import { MAIN, NODE, indexEntries, procAnonMb, procRssMb, schedPrefix, unitEnv, unitNodeArgs, writeDaemonConfig } from './lib/daemon-run.mjs';
import { startTlsFront } from './lib/tls-front.mjs';
import { seedMembers } from './lib/images.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// BENCH_MAIN=PATH: another build of the daemon, BENCH_NODE=PATH another node to run it and the bare
// baseline on (lib/daemon-run.mjs), for runs in turn with this one.
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 60);
const STARTS = Number(process.env.STARTS ?? 7);
// Idle RSS is bimodal (a ~10 MB malloc high-water mark from start-up stays or goes, by timing):
// the idle phase runs ROUNDS daemons of each kind side by side and reports every figure.
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { faceImagePng } = await import(join(ROOT, 'dist/daemon/sample-images.js'));
const require = createRequire(join(ROOT, 'package.json'));
const unix = require('unix-dgram');

const CLK_TCK = 100; // Linux USER_HZ

function procCpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK; // utime + stime
}
function childrenOf(pid) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d), ...childrenOf(Number(d)));
    } catch { /* gone */ }
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-daemon-'));
const emulator = await startEmulator({ port: 0 });
const group = emulator.terminals[0].group_id;
emulator.seedFaces(group, Array.from({ length: 20 }, (_, i) => ({ name: `face-${i}`, image: faceImagePng([i * 10, 120, 200 - i * 5]) })));
const config = writeDaemonConfig(dir, emulator, emulator.terminals[0]);
const tlsFront = await startTlsFront(emulator.baseUrl, dir);
if (tlsFront.error) console.log(`the daemon over https is not measured: ${tlsFront.error}`);
const BIG_GROUP = Number(process.env.BIG_GROUP ?? 10_000);
const bigEmulator = BIG_GROUP > 0 ? await startEmulator({ port: 0 }) : undefined;
if (bigEmulator) seedMembers(bigEmulator, bigEmulator.terminals[0].group_id, BIG_GROUP);

const notifyPath = join(dir, 'notify.sock');
const sock = unix.createSocket('unix_dgram');
let onMessage = () => {};
sock.on('message', (buf) => onMessage(buf.toString()));
sock.bind(notifyPath);

const alsaEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
// The daemon runs as the unit runs it: its Environment= lines apply (MALLOC_ARENA_MAX, MALLOC_TRIM_THRESHOLD_,
// unitEnv), the node flags of its ExecStart= (unitNodeArgs) and its CPUSchedulingPolicy (schedPrefix), all
// read from the unit by lib/daemon-run.mjs.

// `nodeArgs` go to node after the unit's flags, `traceEnv` is added to the environment (tracedBuiltins).
async function startDaemon(extraEnv = unitEnv, cgroup = undefined, nodeArgs = [], configPath = config, traceEnv = {}) {
  const t0 = process.hrtime.bigint();
  let child;
  // Wall time is at the mercy of a shared machine; the daemon's own CPU until READY is not.
  const ready = new Promise((resolve) => {
    onMessage = (m) => m.includes('READY=1') && resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: procCpuSeconds(child.pid) * 1000 });
  });
  // As the unit, with its scheduling policy too (lib/daemon-run.mjs).
  const [cmd, ...argv] = inCgroup(cgroup, [...(extraEnv === unitEnv ? schedPrefix : []), NODE, ...(extraEnv === unitEnv ? unitNodeArgs : []), ...nodeArgs, MAIN, 'run', '--config', configPath]);
  child = spawn(cmd, argv, { env: { ...alsaEnv, ...extraEnv, ...traceEnv, NOTIFY_SOCKET: notifyPath, WATCHDOG_USEC: '30000000' }, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise((_, reject) => child.once('close', (code) => reject(new Error(`the daemon exited (${code}) before READY=1`))));
  const { ms, cpuMs } = await Promise.race([ready, exited]);
  return { child, ms, cpuMs };
}
async function stop(child) {
  const done = new Promise((r) => child.once('close', r));
  child.kill('SIGTERM');
  await done;
}
async function bareNodeStartMs(cgroup = undefined) {
  const t0 = process.hrtime.bigint();
  const [cmd, ...argv] = inCgroup(cgroup, [NODE, '-e', '0']);
  await new Promise((r) => spawn(cmd, argv).once('close', r));
  return Number(process.hrtime.bigint() - t0) / 1e6;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// 1. Start to READY (the first start creates agent.db; later ones find it), each start paired with
//    a bare node start; then the same on the Pi budget.
async function startsToReady(label, cgroup) {
  const readyMs = [];
  const readyCpu = [];
  const bareMs = [];
  for (let i = 0; i < STARTS; i++) {
    bareMs.push(await bareNodeStartMs(cgroup));
    const { child, ms, cpuMs } = await startDaemon(unitEnv, cgroup);
    readyMs.push(ms);
    readyCpu.push(cpuMs);
    await stop(child);
  }
  const ratio = median(readyMs.map((r, i) => r / bareMs[i]));
  console.log(`${label}start to READY=1: median ${median(readyMs).toFixed(0)} ms of ${STARTS} (${readyMs.map((x) => x.toFixed(0)).join(', ')}); bare 'node -e 0': median ${median(bareMs).toFixed(0)} ms; ratio (pair by pair, median) ${ratio.toFixed(1)}x; the daemon's CPU until READY: median ${median(readyCpu).toFixed(0)} ms`);
}
await startsToReady('', undefined);
const cg = quarterCoreCgroup();
if (cg.error) console.log(`Pi budget skipped: no cgroup with a CPU limit could be made here (${cg.error})`);
else {
  try {
    await startsToReady(`Pi budget (${cg.how}): `, cg);
  } finally {
    cg.remove();
  }
}

// 2. Idle: the daemon after its first sync, every enroll folder watched, next to a bare node. A
//    second daemon (own state) without the unit's Environment= shows what the malloc settings save.
//    ROUNDS rounds one after another (a terminal runs one daemon: no start-up contention).
// Idle means after start-up: the first sync, index.json, TTS cache init, and V8's one-off
// "memory reducer" full GCs a few seconds after the allocation rate drops (~0.2 s CPU, once).
const SETTLE_SECONDS = Number(process.env.SETTLE_SECONDS ?? 20);
const family = (pid) => [pid, ...childrenOf(pid)];
const cpuOf = (pids) => pids.reduce((a, p) => { try { return a + procCpuSeconds(p); } catch { return a; } }, 0);
const rssOf = (pids) => pids.reduce((a, p) => { try { return a + procRssMb(p); } catch { return a; } }, 0);

/** A config like the main one with its own state, socket and folders (and, for https, the front's URLs). */
function configFor(name, tls = false) {
  const path = join(dir, `config-${name}.yaml`);
  let text = readFileSync(config, 'utf8').replace(join(dir, 'state'), join(dir, `state-${name}`)).replace(join(dir, 'ctl.sock'), join(dir, `ctl-${name}.sock`)).replace(join(dir, 'enroll'), join(dir, `enroll-${name}`));
  if (tls) text = text.replace(emulator.faceBaseUrl, tlsFront.url(emulator.faceBaseUrl)).replace(emulator.baseUrl, tlsFront.url(emulator.baseUrl));
  writeFileSync(path, text);
  return path;
}

// Node's own floor for this daemon: a node that loads the public built-in modules the idle daemon
// has loaded and listens on a unix socket, as the control socket does (which loads cluster and
// child_process), run as the unit runs the daemon (its flags decide whether node takes its own
// modules' code cache). None of the agent's code can take the daemon below it; the daemon's RSS
// over it is what the agent itself holds. The list is the daemon's own, traced in this run (r41;
// until then a list written by hand from r39's trace, which r40's change made wrong): one daemon
// started with test/cli/fixtures/trace-loads.cjs, which writes process.moduleLoadList as it exits,
// runs to its first sync and a GET /status on its socket, then stops.
const TRACE_HOOK = join(ROOT, 'test/cli/fixtures/trace-loads.cjs');
async function tracedBuiltins() {
  const trace = join(dir, 'builtins.trace');
  const cfg = configFor('trace');
  const { child } = await startDaemon(unitEnv, undefined, ['--require', TRACE_HOOK], cfg, { TA_TRACE_FILE: trace });
  const index = join(dir, 'state-trace', 'faces', 'index.json');
  for (let i = 0; i < 200 && indexEntries(index) < 20; i++) await sleep(50);
  // What the daemon does once its first sync is over.
  await sleep(2000);
  await new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath: join(dir, 'ctl-trace.sock'), path: '/status' }, (res) => { res.resume(); res.on('end', resolve); });
    req.on('error', reject);
    req.end();
  });
  await stop(child);
  const loaded = readFileSync(trace, 'utf8').split('\n').filter((l) => l.startsWith('builtin:')).map((l) => l.slice('builtin:'.length));
  const list = loaded.filter((m) => builtinModules.includes(m) && !m.startsWith('_'));
  if (!list.includes('net')) throw new Error(`the traced daemon's built-in modules look wrong: ${list.join(', ')}`);
  return list;
}
const FLOOR_MODULES = ROUNDS > 0 ? await tracedBuiltins() : [];
if (ROUNDS > 0) console.log(`node's floor loads the ${FLOOR_MODULES.length} public built-in modules the daemon loaded (traced): ${FLOOR_MODULES.join(', ')}`);
function spawnFloor(round) {
  const code = `for (const m of ${JSON.stringify(FLOOR_MODULES)}) require(m); require('net').createServer().listen(${JSON.stringify(join(dir, `floor-${round}.sock`))}); setInterval(() => {}, 1000)`;
  return spawn(NODE, [...unitNodeArgs, '-e', code], { env: { ...alsaEnv, ...unitEnv }, stdio: 'ignore' });
}

/** The daemon over https, as the unit runs it (its Environment=, node flags and scheduling policy). */
function spawnOverTls(round) {
  const [cmd, ...argv] = [...schedPrefix, NODE, ...unitNodeArgs, MAIN, 'run', '--config', configFor(`tls-${round}`, true)];
  return spawn(cmd, argv, { env: { ...alsaEnv, ...unitEnv, NODE_EXTRA_CA_CERTS: tlsFront.caFile }, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** The daemon of the large group, as the unit runs it, in its own folder. */
function spawnBig(round) {
  const bigDir = join(dir, `big-${round}`);
  mkdirSync(bigDir);
  const [cmd, ...argv] = [...schedPrefix, NODE, ...unitNodeArgs, MAIN, 'run', '--config', writeDaemonConfig(bigDir, bigEmulator, bigEmulator.terminals[0])];
  return { child: spawn(cmd, argv, { env: { ...alsaEnv, ...unitEnv }, stdio: ['ignore', 'ignore', 'inherit'] }), index: join(bigDir, 'state', 'faces', 'index.json') };
}

/** Faces in a daemon's face cache index (it synced them over its connection), 0 when none. */
function cachedFaces(name) {
  return indexEntries(join(dir, `state-${name}`, 'faces', 'index.json'));
}

async function idleRound(round) {
  const { child } = await startDaemon();
  const plain = spawn(NODE, [MAIN, 'run', '--config', configFor(`plain-${round}`)], { env: alsaEnv, stdio: ['ignore', 'ignore', 'inherit'] });
  const overTls = tlsFront.error ? undefined : spawnOverTls(round);
  const baseline = spawn(NODE, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const floor = spawnFloor(round);
  const big = bigEmulator ? spawnBig(round) : undefined;
  await sleep(SETTLE_SECONDS * 1000);
  if (big) {
    // Its idle starts when its first sync is over; V8 settles its heap in the seconds after.
    const t0 = performance.now();
    while (indexEntries(big.index) < BIG_GROUP && performance.now() - t0 < 300_000 && big.child.exitCode === null) await sleep(500);
    await sleep(15_000);
  }
  const watched = { daemon: child.pid, plain: plain.pid, baseline: baseline.pid, floor: floor.pid, ...(overTls ? { tls: overTls.pid } : {}), ...(big ? { big: big.child.pid } : {}) };
  const start = Object.fromEntries(Object.entries(watched).map(([k, pid]) => [k, { self: procCpuSeconds(pid), all: cpuOf(family(pid)) }]));
  const max = Object.fromEntries(Object.keys(watched).map((k) => [k, { self: 0, all: 0, anon: 0 }]));
  for (let s = 0; s < IDLE_SECONDS; s++) {
    await sleep(1000);
    for (const [k, pid] of Object.entries(watched)) {
      max[k].self = Math.max(max[k].self, procRssMb(pid));
      max[k].anon = Math.max(max[k].anon, procAnonMb(pid));
      max[k].all = Math.max(max[k].all, rssOf(family(pid)));
    }
  }
  const cpu = (k, which) => (((which === 'self' ? procCpuSeconds(watched[k]) : cpuOf(family(watched[k]))) - start[k][which]) / IDLE_SECONDS) * 100;
  // Its figures count only if it did sync through the front: all 20 faces in its cache.
  const tlsSynced = overTls ? cachedFaces(`tls-${round}`) : 0;
  const r = {
    rss: max.daemon.self, cpu: cpu('daemon', 'self'), children: family(child.pid).length - 1, rssAll: max.daemon.all, cpuAll: cpu('daemon', 'all'),
    plainRss: max.plain.self, plainCpu: cpu('plain', 'self'), baseRss: max.baseline.self, baseCpu: cpu('baseline', 'self'), floorRss: max.floor.self, anon: max.daemon.anon, baseAnon: max.baseline.anon, floorAnon: max.floor.anon,
    ...(overTls && tlsSynced === 20 ? { tlsRss: max.tls.self, tlsCpu: cpu('tls', 'self') } : {}),
    ...(big && indexEntries(big.index) === BIG_GROUP ? { bigRss: max.big.self, bigCpu: cpu('big', 'self') } : {}),
  };
  const bigPart = !big ? '' : r.bigRss === undefined ? `; ${BIG_GROUP} faces: NOT MEASURED (its cache holds ${indexEntries(big.index)})`
    : `; with ${BIG_GROUP} faces cached ${r.bigRss.toFixed(1)} MB, ${r.bigCpu.toFixed(2)} %`;
  const tlsPart = !overTls ? '' : r.tlsRss === undefined ? `; over https: NOT MEASURED (its cache holds ${tlsSynced} of 20 faces: it did not sync through the front)`
    : `; over https ${r.tlsRss.toFixed(1)} MB, ${r.tlsCpu.toFixed(2)} %`;
  console.log(`  round ${round + 1}: daemon as the unit runs it RSS max ${r.rss.toFixed(1)} MB, RssAnon max ${r.anon.toFixed(1)} MB, CPU ${r.cpu.toFixed(2)} % (with its ${r.children} children: ${r.rssAll.toFixed(1)} MB, ${r.cpuAll.toFixed(2)} %); ` +
    `without the unit's Environment= ${r.plainRss.toFixed(1)} MB, ${r.plainCpu.toFixed(2)} %; bare node ${r.baseRss.toFixed(1)} MB (RssAnon ${r.baseAnon.toFixed(1)}), ${r.baseCpu.toFixed(2)} %; node's floor ${r.floorRss.toFixed(1)} MB (RssAnon ${r.floorAnon.toFixed(1)})${tlsPart}${bigPart}`);
  plain.kill('SIGTERM');
  overTls?.kill('SIGTERM');
  big?.child.kill('SIGTERM');
  baseline.kill();
  floor.kill();
  await stop(child);
  await Promise.all([plain, ...(overTls ? [overTls] : []), ...(big ? [big.child] : [])].map((p) => new Promise((res) => (p.exitCode !== null ? res() : p.once('close', res)))));
  return r;
}

// ROUNDS=0: start to READY only (the idle part takes SETTLE_SECONDS + IDLE_SECONDS per round).
const rounds = [];
if (ROUNDS > 0) {
  console.log(`idle ${IDLE_SECONDS}s after ${SETTLE_SECONDS}s settling, ${ROUNDS} round(s):`);
  for (let i = 0; i < ROUNDS; i++) rounds.push(await idleRound(i));
} else {
  console.log('idle: skipped (ROUNDS=0)');
}
sock.close();
if (!tlsFront.error) await tlsFront.close();
await bigEmulator?.close();
await emulator.close();
rmSync(dir, { recursive: true, force: true });
if (rounds.length > 0) {
  const col = (k) => rounds.map((r) => r[k]);
  const maxOf = (xs) => Math.max(...xs);
  const medRss = median(col('rss'));
  const medCpu = median(col('cpu'));
  console.log(`daemon as the unit runs it: RSS median ${medRss.toFixed(1)} MB, max ${maxOf(col('rss')).toFixed(1)} MB; CPU median ${medCpu.toFixed(2)} %, max ${maxOf(col('cpu')).toFixed(2)} %   (targets <= 55 MB, <= 0.2 %)`);
  console.log(`without the unit's Environment= (glibc defaults): RSS median ${median(col('plainRss')).toFixed(1)} MB, max ${maxOf(col('plainRss')).toFixed(1)} MB`);
  console.log(`baseline bare node (setInterval 1s): RSS median ${median(col('baseRss')).toFixed(1)} MB, CPU ${median(col('baseCpu')).toFixed(2)} %; daemon/baseline RSS ratio ${(medRss / median(col('baseRss'))).toFixed(1)}x`);
  const medFloor = median(col('floorRss'));
  console.log(`baseline node's floor (the built-in modules the daemon loads, a listening unix socket, as the unit runs it): RSS median ${medFloor.toFixed(1)} MB; ` +
    `the daemon holds ${(medRss - medFloor).toFixed(1)} MB over it (median of the rounds' differences ${median(rounds.map((r) => r.rss - r.floorRss)).toFixed(1)} MB)`);
  console.log(`RssAnon (the idle budget, <= 25 MB): daemon median ${median(col('anon')).toFixed(1)} MB, max ${maxOf(col('anon')).toFixed(1)} MB; bare node ${median(col('baseAnon')).toFixed(1)} MB; node's floor ${median(col('floorAnon')).toFixed(1)} MB`);
  const tlsRounds = rounds.filter((r) => r.tlsRss !== undefined);
  if (tlsRounds.length > 0) {
    const tls = (k) => tlsRounds.map((r) => r[k]);
    const medTls = median(tls('tlsRss'));
    console.log(`daemon as the unit runs it, over https (as in the field): RSS median ${medTls.toFixed(1)} MB, max ${maxOf(tls('tlsRss')).toFixed(1)} MB; CPU median ${median(tls('tlsCpu')).toFixed(2)} %; ` +
      `${(medTls - medRss).toFixed(1)} MB over plain http; ${medTls <= 55 ? 'within' : 'OVER'} the 55 MB target`);
  }
  const bigRounds = rounds.filter((r) => r.bigRss !== undefined);
  if (bigRounds.length > 0) {
    const medBig = median(bigRounds.map((r) => r.bigRss));
    console.log(`daemon of a group of ${BIG_GROUP} faces, idle after its first sync: RSS median ${medBig.toFixed(1)} MB, max ${maxOf(bigRounds.map((r) => r.bigRss)).toFixed(1)} MB; ` +
      `CPU median ${median(bigRounds.map((r) => r.bigCpu)).toFixed(2)} %; ${(medBig - medRss).toFixed(1)} MB over the 20-face daemon (${((medBig - medRss) * 1024 * 1024 / (BIG_GROUP - 20)).toFixed(0)} bytes a face)`);
  }
  const ok = medRss <= 55 && medCpu <= 0.2;
  console.log(ok ? 'within targets (median of the rounds, plain http to the emulator)' : 'OUTSIDE targets');
}
