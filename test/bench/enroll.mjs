// Enrollment benchmark, end to end as a user sees it: the real daemon (dist/main.js run, default
// settings, as the systemd unit runs it) is started, COUNT face images (~30 KB of random pixels)
// are copied at once into enroll/faces/, and the clock stops when the last original is in
// done/faces/. Beside it, in the same run, a plain loop (its own process) POSTs the same files with
// the same concurrency (4). Target: end to end <= settle_time + 1.25 x the plain loop.
// That plain loop uses the agent's own HTTP client, so it gets faster whenever the client does; a
// second one right after it, on node:http alone (lib/plain-loops.mjs post-node), is a baseline that
// never moves, and the daemon's ratio against it is printed beside, for information (no target).
// Also printed: the daemon's own CPU per file (utime+stime from /proc/PID/stat, from the copy to
// the moment every result file and the face cache are written, so all the work the files caused)
// and its peak RSS (VmHWM). Beside it, the plain loop's own CPU per file (utime+stime of its
// process over its loop, every thread): what POSTing a file costs at all, the floor to judge the
// daemon's figure against.
// And the bytes written per file (a Pi's SD card wears by them): the daemon's own (/proc/PID/io)
// and, on a BENCH_FS loop mount, its device's (the inbox copy, the journal and metadata included).
// Variants: no added latency (the one that counts), 20 ms of service latency, and "Pi budget": the
// daemon and the plain loops each confined to a quarter of one core (see lib/daemon-run.mjs).
//   npm run build && node test/bench/enroll.mjs [COUNT]
//   env RUNS=3 (runs per variant), VARIANTS=0,20,pi, BENCH_PROF=DIR (--cpu-prof of the daemon; with BENCH_MAIN, lib/daemon-run.mjs, its frames name src/ modules),
//   BENCH_FS=ext4 (every folder on a loop-mounted ext4 with a journal, as a Pi's SD card; lib/bench-fs.mjs; ext4-nojournal: a new one without),
//   BENCH_WARM=N (N other files enrolled by the same daemon before the timed burst, untimed: a daemon
//   that has run a while, its JIT warm, as on a terminal that has been up for days),
//   BENCH_GROUP=N (the group holds N other faces, 2 KB images, before the daemon starts: its every
//   listing, which tells enrollment the new faces' ids, carries them; the timed burst starts once
//   the daemon's first sync has cached them),
//   BENCH_THREADS=1 (the daemon's CPU by thread, and the service's side: the emulator runs in this
//   process, so its CPU beside the plain loop tells whether that loop waits on the service),
//   BENCH_SCHED=other (the daemon without the unit's CPUSchedulingPolicy=batch; lib/daemon-run.mjs),
//   BENCH_JOURNAL=1 (the daemon logs through the journal's native socket, as under systemd, to a
//   receiver in its own process: lib/daemon-run.mjs startJournalReceiver),
//   BENCH_SLOW_SYNC_MS=N (every fsync/fdatasync of the daemon N ms slower, an SD card's flush:
//   lib/slow-sync.mjs; r48: 5 ms made the burst about 1.15x longer, 20 ms about 2.25x),
//   BENCH_TLS=1 (daemon and plain loop both talk HTTPS to the emulator through lib/tls-front.mjs, as
//   a terminal talks to its cloud: every upload encrypted, each new connection a TLS handshake),
//   AFTER_SECONDS=N (default 15 in the no-latency runs, 0 in the others): how long the daemon is
//   kept once the burst is done, for its RSS then against its RSS just before the burst (the
//   memory a burst leaves behind: V8 frees the images at a full GC seconds later; RssAnon beside
//   it, the anonymous memory alone)
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchWorkDir, createCost, deviceWrittenBytes, settleDisk } from './lib/bench-fs.mjs';
import { startTlsFront } from './lib/tls-front.mjs';
import { slowSyncEnv } from './lib/slow-sync.mjs';
import { randomJpeg, seedMembers } from './lib/images.mjs';
import { createPiBudget, startJournalReceiver, procCpuSplitMs, procThreadCpuMs, procAnonMb, procPeakRssMb, procRssMb, procWriteBytes, spawnDaemon, spawnNode, spread, writeDaemonConfig, ROOT } from './lib/daemon-run.mjs';

const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { configSchema } = await import(join(ROOT, 'dist/config/schema.js'));

const COUNT = Number(process.argv[2] ?? 1000);
const CONCURRENCY = 4;
const IMAGE_BYTES = 30 * 1024;
const RUNS = Number(process.env.RUNS ?? 2);
const VARIANTS = (process.env.VARIANTS ?? '0,20,pi').split(',');
const SETTLE_MS = configSchema.parse({ service: { base_url: 'https://x', face_base_url: 'https://x/v1/api', terminal_secret: 'x' }, state_dir: '/x' }).enroll.settle_time;
const PLAIN = join(ROOT, 'test/bench/lib/plain-loops.mjs');

const workDir = benchWorkDir('ta-bench-enroll-');
if (!workDir) process.exit(0);
const root = workDir.dir;
if (process.env.BENCH_FS) console.log(`folders on ${workDir.how}`);
const source = join(root, 'source');
await mkdir(source);
const names = Array.from({ length: COUNT }, (_, i) => `person-${String(i).padStart(4, '0')}`);
const WARM = Number(process.env.BENCH_WARM ?? 0);
const GROUP = Number(process.env.BENCH_GROUP ?? 0);
const TLS = process.env.BENCH_TLS === '1';
const slowSync = slowSyncEnv(process.env.BENCH_SLOW_SYNC_MS);
if (slowSync.SLOW_SYNC_MS) console.log(`the daemon's every fsync and fdatasync ${slowSync.SLOW_SYNC_MS} ms slower (BENCH_SLOW_SYNC_MS, lib/slow-sync.mjs)`);
const warmNames = Array.from({ length: WARM }, (_, i) => `warm-${String(i).padStart(4, '0')}`);
for (const n of [...names, ...warmNames]) {
  await writeFile(join(source, `${n}.jpg`), randomJpeg(IMAGE_BYTES));
}

/**
 * The longest gap between `[start, end]` intervals (ms), from the first start to the last end:
 * { gap, at (when it began), before (intervals ended by then) }.
 */
function longestGap(intervals) {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let longest = { gap: 0, at: sorted[0]?.[0] ?? 0 };
  let reach = sorted[0]?.[1] ?? 0;
  for (const [start, end] of sorted) {
    if (start - reach > longest.gap) longest = { gap: start - reach, at: reach };
    reach = Math.max(reach, end);
  }
  return { ...longest, before: sorted.filter(([, end]) => end <= longest.at).length };
}

/** This process's CPU (user + system) since `from` (a process.cpuUsage()), ms. */
function cpuMsSince(from) {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
}

/** mode 'post': the loop on the agent's client; 'post-node': on node:http alone. */
function runPlainLoop(service, budget, tlsEnv, mode = 'post') {
  return new Promise((resolve, reject) => {
    const child = spawnNode([PLAIN, mode], { env: { ...process.env, ...tlsEnv, BENCH_ARGS: JSON.stringify({ service, dir: source, names, concurrency: CONCURRENCY }) }, stdio: ['ignore', 'pipe', 'inherit'] }, budget);
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`plain loop (${mode}) exited ${code}`));
      const r = JSON.parse(out);
      return r.count === COUNT ? resolve(r) : reject(new Error(`plain loop (${mode}) uploaded ${r.count} of ${COUNT} files`));
    });
  });
}

async function countFiles(dir, pred) {
  try {
    return (await readdir(dir)).filter(pred).length;
  } catch {
    return 0;
  }
}

/**
 * Resolves `all` once every name in `expected` has appeared in `dir`, seen through inotify
 * (fs.watch). It was a readdir of the folder every 20 ms, in this process, which is the emulator's:
 * at 2,000 names each took 1.3 ms of CPU, taken from the service the daemon waits on (about 100
 * of them in a burst), and the end was known only to the next poll. A name reported is checked
 * with a stat (inotify also reports a name that went), and the folder is listed once more at the
 * end, so that an event the kernel dropped cannot end the run early or stop it.
 */
function watchArrivals(dir, expected) {
  const waiting = new Set(expected);
  let resolve;
  const all = new Promise((r) => {
    resolve = r;
  });
  const check = (name) => {
    if (!waiting.has(name)) return;
    try {
      statSync(join(dir, name));
    } catch {
      return;
    }
    waiting.delete(name);
    if (waiting.size === 0) resolve();
  };
  const watcher = watch(dir, (_event, name) => {
    if (name) check(String(name));
  });
  // The watch starts before the copy: anything already there (none in a fresh run) counts too.
  for (const name of readdirSync(dir)) check(name);
  // A safety net, not the clock: once a second, the folder is listed (and after 10 minutes, given up).
  const t0 = performance.now();
  let fail;
  const failed = new Promise((_, reject) => {
    fail = reject;
  });
  const sweep = setInterval(() => {
    for (const name of readdirSync(dir)) if (waiting.delete(name) && waiting.size === 0) resolve();
    if (performance.now() - t0 > 600_000) fail(new Error(`enrollment did not finish in 10 minutes (${waiting.size} originals not in ${dir})`));
  }, 1000);
  return {
    all: Promise.race([all, failed]).finally(() => clearInterval(sweep)),
    close() {
      clearInterval(sweep);
      watcher.close();
    },
  };
}

async function indexCount(path) {
  try {
    return JSON.parse(await readFile(path, 'utf8')).length;
  } catch {
    return 0;
  }
}

async function oneRun(latencyMs, budget, runNo) {
  const dir = await mkdtemp(join(root, 'run-'));
  const terminals = [
    { terminal_secret: `ts_${randomBytes(16).toString('hex')}`, group_id: 'bench-baseline' },
    { terminal_secret: `ts_${randomBytes(16).toString('hex')}`, group_id: 'bench-enroll' },
  ];
  const emulator = await startEmulator({ port: 0, terminals, tts: 'tone', chaos: { latencyMs } });
  const front = TLS ? await startTlsFront(emulator.baseUrl, dir) : undefined;
  let daemon;
  let journal;
  try {
    if (front?.error) throw new Error(`BENCH_TLS=1: ${front.error}`);
    // What the daemon and the plain loop are told the service is: the emulator, or its HTTPS front.
    const served = front ? { ...emulator, apiKey: emulator.apiKey, baseUrl: front.url(emulator.baseUrl), faceBaseUrl: front.url(emulator.faceBaseUrl) } : emulator;
    const tlsEnv = front ? { NODE_EXTRA_CA_CERTS: front.caFile } : {};
    const service = configSchema.parse({ service: { base_url: served.baseUrl, face_base_url: served.faceBaseUrl, terminal_secret: terminals[0].terminal_secret }, state_dir: '/x' }).service;
    settleDisk(root);
    // This process's CPU is the emulator's (and this loop's own polling): what bounds the plain loop.
    const serviceCpu0 = process.cpuUsage();
    const plain = await runPlainLoop(service, budget, tlsEnv);
    const servicePlainMs = cpuMsSince(serviceCpu0);
    const plainHandshakes = front ? { ...front.handshakes } : undefined;
    settleDisk(root);
    const nodePlain = await runPlainLoop(service, budget, tlsEnv, 'post-node');
    const nodeHandshakes = front ? { ...front.handshakes } : undefined;

    seedMembers(emulator, terminals[1].group_id, GROUP);
    const config = writeDaemonConfig(dir, served, terminals[1]);
    const prof = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [];
    journal = await startJournalReceiver(dir);
    daemon = spawnDaemon(dir, config, { budget, extraArgs: prof, env: { ...tlsEnv, ...journal.env, ...slowSync } });
    await daemon.ready;
    const inbox = join(dir, 'enroll', 'faces');
    const doneDir = join(dir, 'enroll', 'done', 'faces');
    const index = join(dir, 'state', 'faces', 'index.json');
    // Let the start-up face sync finish: its cost is the daemon's, not the files'.
    await sleep(1500);
    for (const g0 = performance.now(); (await indexCount(index)) < GROUP; await sleep(100)) {
      if (performance.now() - g0 > 600_000) throw new Error('the first sync of the group did not finish in 10 minutes');
    }
    if (WARM > 0) {
      const warmCpu0 = procCpuSplitMs(daemon.pid);
      for (const n of warmNames) await copyFile(join(source, `${n}.jpg`), join(inbox, `${n}.jpg`));
      const w0 = performance.now();
      while ((await countFiles(doneDir, (f) => f.endsWith('.json'))) < WARM || (await indexCount(index)) < WARM + GROUP) {
        if (performance.now() - w0 > 600_000) throw new Error('the warm-up files did not finish in 10 minutes');
        await sleep(50);
      }
      // The warm-up's own CPU per file: a change that only moves the optimizing compiler's work
      // from the timed burst into the warm-up (or back) shows here.
      const warmCpu1 = procCpuSplitMs(daemon.pid);
      console.log(`  warm-up: ${WARM} files, CPU ${((warmCpu1.user + warmCpu1.sys - warmCpu0.user - warmCpu0.sys) / WARM).toFixed(2)} ms/file`);
      await sleep(1500);
    }
    const createUs = createCost(dir);
    settleDisk(root);
    const pid = daemon.pid;
    const rssBeforeMb = procRssMb(pid);
    const anonBeforeMb = procAnonMb(pid);
    const cpu0 = procCpuSplitMs(pid);
    const threads0 = procThreadCpuMs(pid);
    const written0 = procWriteBytes(pid);
    const device0 = deviceWrittenBytes(dir);
    const serviceCpu1 = process.cpuUsage();
    const arrivals = watchArrivals(doneDir, names.map((n) => `${n}.jpg`));
    const t0 = performance.now();
    const epoch0 = Date.now();
    for (const n of names) await copyFile(join(source, `${n}.jpg`), join(inbox, `${n}.jpg`));
    const copyMs = performance.now() - t0;
    try {
      await arrivals.all;
    } finally {
      arrivals.close();
    }
    const endMs = performance.now() - t0;
    let doneAllMs;
    for (;;) {
      const results = await countFiles(doneDir, (f) => f.endsWith('.json') && !f.startsWith('warm-'));
      if (results >= COUNT && (await indexCount(index)) >= COUNT + WARM + GROUP) {
        doneAllMs = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > 600_000) throw new Error('enrollment did not finish in 10 minutes');
      await sleep(20);
    }
    const serviceBurstMs = cpuMsSince(serviceCpu1);
    const cpu1 = procCpuSplitMs(pid);
    const threads1 = procThreadCpuMs(pid);
    const written1 = procWriteBytes(pid);
    // The device's count once ext4 has written out what the burst left dirty (untimed; only on a
    // BENCH_FS loop mount, where the device is the benchmark's own).
    if (device0 !== null) settleDisk(dir);
    const device1 = device0 === null ? null : deviceWrittenBytes(dir);
    if (process.env.BENCH_THREADS) console.log(`  the service's side (the emulator, in the benchmark's process, with its copy and watch), CPU ms per file: beside the plain loop ${(servicePlainMs / COUNT).toFixed(2)}, beside the daemon ${(serviceBurstMs / COUNT).toFixed(2)}`);
    if (process.env.BENCH_THREADS) console.log(`  CPU by thread, ms per file: ${Object.entries(threads1).map(([k, v]) => [k, (v - (threads0[k] ?? 0)) / COUNT]).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}; children ${((cpu1.user + cpu1.sys - cpu0.user - cpu0.sys - Object.values(threads1).reduce((a, b) => a + b, 0) + Object.values(threads0).reduce((a, b) => a + b, 0)) / COUNT).toFixed(2)}`);
    const userMs = cpu1.user - cpu0.user;
    const cpuMs = userMs + cpu1.sys - cpu0.sys;
    const peakRssMb = procPeakRssMb(pid);
    const afterSeconds = Number(process.env.AFTER_SECONDS ?? (latencyMs === 0 && !budget ? 15 : 0));
    let rssAfterMb;
    let anonAfterMb;
    if (afterSeconds > 0) {
      await sleep(afterSeconds * 1000);
      rssAfterMb = procRssMb(pid);
      anonAfterMb = procAnonMb(pid);
    }
    await daemon.stop();
    const journalEntries = await journal.stop();
    const faces = emulator.state.faces(terminals[1].group_id).filter((f) => !f.name.startsWith('warm-') && !f.name.startsWith('member-'));
    const perName = new Map();
    for (const f of faces) perName.set(f.name, (perName.get(f.name) ?? 0) + 1);
    const allOnce = names.every((n) => perName.get(n) === 1) && faces.length === COUNT;
    const lists = emulator.requests.filter((r) => r.method === 'GET' && r.path === '/v1/api/faces').length;
    const imageGets = emulator.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/image') && r.at >= epoch0).length;
    // Where the wall time goes: when the uploads ran, against the copy's start.
    const posts = emulator.requests.filter((r) => r.method === 'POST' && r.path === '/v1/api/faces' && r.at >= epoch0);
    const firstPost = Math.min(...posts.map((p) => p.at)) - epoch0;
    const lastPost = Math.max(...posts.map((p) => p.at + p.durationMs)) - epoch0;
    // The longest stretch between the first and the last upload with none in flight: a burst the
    // daemon stalled in (a lost wake-up, a blocked event loop) shows here, whatever its CPU.
    const stall = longestGap(posts.map((p) => [p.at, p.at + p.durationMs]));
    const stallMs = stall.gap;
    // Over HTTPS: the TLS sessions each side opened (whole handshakes, resumed ones) and the ciphers.
    const tlsPart = !front ? '' : `; over https: plain loop ${plainHandshakes.full} whole + ${plainHandshakes.resumed} resumed handshakes, ` +
      `node:http loop ${nodeHandshakes.full - plainHandshakes.full} + ${nodeHandshakes.resumed - plainHandshakes.resumed}, ` +
      `daemon ${front.handshakes.full - nodeHandshakes.full} + ${front.handshakes.resumed - nodeHandshakes.resumed} (its start-up sync included), ciphers ${Object.keys(front.ciphers).join(', ')}`;
    // What the burst cost the disk (a Pi's SD card wears by the bytes written): the daemon's own
    // writes, and the device's (the copy into the inbox, the journal and metadata included), per file.
    const writtenKb = written0 === null || written1 === null ? undefined : (written1 - written0) / 1024 / COUNT;
    const deviceKb = device0 === null || device1 === null ? undefined : (device1 - device0) / 1024 / COUNT;
    const diskPart = writtenKb === undefined ? '' : `; disk per file: the daemon wrote ${writtenKb.toFixed(1)} KB` +
      (deviceKb === undefined ? '' : `, the device took ${deviceKb.toFixed(1)} KB (the copy into the inbox included)`) + ` for an image of ${(IMAGE_BYTES / 1024).toFixed(0)} KB`;
    const r = { plainMs: plain.ms, plainCpuMs: plain.cpuMs, nodePlainMs: nodePlain.ms, nodePlainCpuMs: nodePlain.cpuMs, endMs, doneAllMs, copyMs, cpuMs, userMs, peakRssMb, rssBeforeMb, rssAfterMb, anonBeforeMb, anonAfterMb, allOnce, lists, createUs, stallMs, writtenKb, deviceKb };
    const afterPart = rssAfterMb === undefined ? '' : `; RSS ${afterSeconds} s after the burst ${rssAfterMb.toFixed(1)} MB (just before it ${rssBeforeMb.toFixed(1)} MB), RssAnon ${anonAfterMb.toFixed(1)} MB (before ${anonBeforeMb.toFixed(1)} MB)`;
    r.ratio = endMs / plain.ms;
    r.ok = endMs <= SETTLE_MS + 1.25 * plain.ms;
    r.nodeRatio = endMs / nodePlain.ms;
    console.log(`  run ${runNo}: plain loop ${(plain.ms / 1000).toFixed(2)} s; node:http loop ${(nodePlain.ms / 1000).toFixed(2)} s (daemon / node:http ${r.nodeRatio.toFixed(2)}x); daemon: last original in done/ ${(endMs / 1000).toFixed(2)} s (copy ${(copyMs / 1000).toFixed(2)} s), ` +
      `results + face cache ${(doneAllMs / 1000).toFixed(2)} s; end to end / plain ${r.ratio.toFixed(2)}x, target <= ${((SETTLE_MS + 1.25 * plain.ms) / 1000).toFixed(2)} s ${r.ok ? 'OK' : 'MISSED'}; ` +
      `CPU ${(cpuMs / COUNT).toFixed(2)} ms/file (user ${(userMs / COUNT).toFixed(2)}; plain loop ${(plain.cpuMs / COUNT).toFixed(2)}, its whole process ${(plain.processCpuMs / COUNT).toFixed(2)}; node:http loop ${(nodePlain.cpuMs / COUNT).toFixed(2)}, its whole process ${(nodePlain.processCpuMs / COUNT).toFixed(2)}); peak RSS ${peakRssMb.toFixed(1)} MB${afterPart}; ${lists} group listings, ${imageGets} image downloads; uploaded exactly once: ${allOnce ? 'yes' : 'NO'}; POSTs from ${(firstPost / 1000).toFixed(2)} s to ${(lastPost / 1000).toFixed(2)} s, longest time with none in flight ${stallMs.toFixed(0)} ms (from ${((stall.at - epoch0) / 1000).toFixed(2)} s, ${stall.before} uploads done); creating a file there: ${createUs.toFixed(0)} µs${diskPart}${tlsPart}${journalEntries === undefined ? '' : `; entries the journal socket took: ${journalEntries}`}`);
    return r;
  } finally {
    // The run's files stay until the benchmark ends (workDir.close): deleting 3,000 of them here
    // made the next run's every new file slower on a journal-less ext4 (see "creating a file
    // there": 21 µs in a first run, 369 and 920 µs in the two after it, with the CPU per file).
    // A run that threw leaves its daemon running, and the emulator's close would wait for the
    // daemon's kept-alive connections: stopped first (a no-op once it has stopped).
    await daemon?.stop();
    await journal?.stop();
    await front?.close?.();
    await emulator.close();
  }
}

console.log(`enroll benchmark${TLS ? ' over HTTPS (BENCH_TLS=1)' : ''}${process.env.BENCH_JOURNAL ? ', the daemon logging to a journal socket (BENCH_JOURNAL=1)' : ''}: ${COUNT} face images of ${IMAGE_BYTES / 1024} KB copied at once into enroll/faces/ of a running daemon (default settings: settle_time ${SETTLE_MS} ms, upload_concurrency ${CONCURRENCY}); plain loops: POSTs at concurrency ${CONCURRENCY}, through the agent's client, then through node:http alone; ${RUNS} run(s) per variant; this machine is shared, figures are noisy`);
let failed = false;
const summary = [];
for (const v of VARIANTS) {
  const pi = v === 'pi';
  const latency = pi ? 0 : Number(v);
  let budget = null;
  if (pi) {
    budget = createPiBudget(`ta-bench-enroll-${process.pid}`);
    if (!budget) {
      console.log('Pi budget: no cgroup cpu controller can be created here (needs root and a cgroup fs): skipped');
      continue;
    }
  }
  const label = pi ? `Pi budget (no added latency; daemon and plain loops each in ${budget.how})` : `${latency} ms service latency${latency === 0 ? ' (the one that counts)' : ''}`;
  console.log(`${label}:`);
  const rs = [];
  try {
    for (let i = 1; i <= RUNS; i++) rs.push(await oneRun(latency, budget, i));
  } finally {
    budget?.close();
  }
  const line = `  => ${pi ? 'Pi budget' : `${latency} ms`}: end to end ${spread(rs.map((r) => r.endMs / 1000), 2, ' s')}; plain loop ${spread(rs.map((r) => r.plainMs / 1000), 2, ' s')}; ratio ${spread(rs.map((r) => r.ratio))}x; ` +
    `node:http loop ${spread(rs.map((r) => r.nodePlainMs / 1000), 2, ' s')} (daemon / node:http ${spread(rs.map((r) => r.nodeRatio))}x); ` +
    `CPU ${spread(rs.map((r) => r.cpuMs / COUNT))} ms/file (plain loop ${spread(rs.map((r) => r.plainCpuMs / COUNT))}, node:http loop ${spread(rs.map((r) => r.nodePlainCpuMs / COUNT))}; daemon / plain loop ${spread(rs.map((r) => r.cpuMs / r.plainCpuMs))}x, which moves less with this machine's speed than either); peak RSS ${spread(rs.map((r) => r.peakRssMb), 1, ' MB')}` +
    (rs.every((r) => r.rssAfterMb !== undefined) ? `; RSS after the burst ${spread(rs.map((r) => r.rssAfterMb), 1, ' MB')} (before it ${spread(rs.map((r) => r.rssBeforeMb), 1, ' MB')})` : '') +
    (rs.every((r) => r.writtenKb !== undefined) ? `; written per file: daemon ${spread(rs.map((r) => r.writtenKb), 1, ' KB')}` : '') +
    (rs.every((r) => r.deviceKb !== undefined) ? `, device ${spread(rs.map((r) => r.deviceKb), 1, ' KB')} (image ${(IMAGE_BYTES / 1024).toFixed(0)} KB)` : '');
  console.log(line);
  summary.push(line);
  if (rs.some((r) => !r.allOnce)) failed = true;
}
console.log('\nsummary:');
for (const l of summary) console.log(l);
workDir.close();
process.exitCode = failed ? 1 : 0;
