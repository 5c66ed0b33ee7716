#!/usr/bin/env node
// Face sync benchmark: N faces with ~30 KB images seeded on the emulator over loopback.
//   npm run build && node test/bench/faces-sync.mjs [--faces 10000] [--size 30000] [--concurrency 8]
//   env RUNS=2 (runs per variant), VARIANTS=0,pi (0 = no added latency; 20 = 20 ms; pi = Pi budget);
//   profiling: BENCH_PROF=DIR (daemon --cpu-prof), BENCH_PROF_PLAIN=DIR (the plain loops'), BENCH_NODE_ARGS,
//   BENCH_DAEMON_ENV and BENCH_SCHED=other (daemon-run.mjs), BENCH_LOG_LEVEL=debug (the daemon's log, with BENCH_NODE_ARGS), BENCH_FIRST_ONLY=1,
//   BENCH_DAEMON_ONLY=1 (first sync only, no plain loop: the daemon's CPU and timeline while iterating; no ratio),
//   BENCH_THREADS=1 (the daemon's CPU by thread: main, libuv pool, V8's), BENCH_FS=ext4 (every folder on a loop-mounted ext4 with a journal, as a Pi's SD card; lib/bench-fs.mjs; ext4-nojournal: a new one without),
//   BENCH_TLS=1 (the first syncs, daemon's and plain loop's, over HTTPS through lib/tls-front.mjs, as a terminal talks to its cloud),
//   BENCH_SLOW_SYNC_MS=N (the daemon's every fsync/fdatasync N ms slower, an SD card's flush: lib/slow-sync.mjs; the plain loops write nothing durably)
// Prints, as figures and ratios:
//   - the first sync end to end as a user sees it: from spawning the real daemon (dist/main.js run,
//     as the unit runs it, a fresh state_dir) to index.json naming all N faces, against a plain
//     list + GET loop (its own process, same concurrency, timed from its spawn too) in the same
//     run; target <= 1.15x. That loop (lib/plain-loops.mjs get) uses the agent's own HTTP client,
//     so it gets faster whenever the client does: a second one right after it, on node:http alone
//     (get-node), is a baseline that never moves, its ratio printed beside for information (no
//     target). Also the daemon's own CPU (/proc/PID/stat) and peak RSS (VmHWM),
//     target <= 120 MB. "Pi budget": daemon and plain loops each confined to a quarter of a core;
//   - a re-sync with no changes: time (target <= 500 ms) and image requests (target 0), counted
//     from the emulator's request log (the sync component in a child process);
//   - a re-sync after 10 changes (3 added, 2 deleted, 2 renamed, 3 images replaced by this agent and
//     refreshed): the image requests must be exactly the 6 changed images and the 2 renamed faces
//     (an edited record is asked about at once, conditionally: a 304).
// The emulator runs in this process. The machine may be shared: each variant runs RUNS times and
// the spread is printed.
import { fork } from 'node:child_process';
import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPiBudget, indexEntries, procCpuSplitMs, procPeakRssMb, procThreadCpuMs, spawnDaemon, spawnNode, spread, writeDaemonConfig } from './lib/daemon-run.mjs';
import { benchWorkDir, createCost, settleDisk } from './lib/bench-fs.mjs';
import { startTlsFront } from './lib/tls-front.mjs';
import { randomJpeg } from './lib/images.mjs';
import { slowSyncEnv } from './lib/slow-sync.mjs';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));
const SECRET = 'bench-terminal-secret-0123456789';
const GROUP = 'bench-group';

const serviceConfig = (emu) => ({
  base_url: emu.baseUrl, face_base_url: emu.faceBaseUrl, terminal_secret: SECRET, request_timeout: 30_000,
  ca_file: '', allow_insecure_http: false, retries: 4, other_auth: 'none',
});

// Compiled in the benchmark's own process only (its children do not spawn daemons).
const slowSync = process.argv[2] === '--child' ? {} : slowSyncEnv(process.env.BENCH_SLOW_SYNC_MS);
const imageSize = (base) => base - 2048 + Math.floor(Math.random() * 4096); // ~base bytes, varied

// ---------------- child: the agent's face sync ----------------
async function childSync({ emu, stateDir, concurrency, initialOnly }) {
  const { createServiceClient } = await import(join(DIST, 'client/service-client.js'));
  const { silentLogger, createLogger } = await import(join(DIST, 'log/logger.js'));
  const { openDatabase } = await import(join(DIST, 'db/database.js'));
  const { createFaceSync } = await import(join(DIST, 'faces/face-sync.js'));
  const client = createServiceClient({ config: serviceConfig(emu), logger: silentLogger(), userAgent: 'bench-sync' });
  const db = openDatabase({ path: join(stateDir, 'agent.db') });
  const sync = createFaceSync({
    config: { state_dir: stateDir, faces: { sync_interval: 3_600_000, image_recheck_interval: 6 * 3_600_000, download_concurrency: concurrency } },
    db, client, logger: createLogger({ level: 'debug', destination: { write: (line) => { if (line.includes('face sync phases')) phases.push(JSON.parse(line)); } } }),
  });
  const phases = [];
  const lastPhases = () => { const p = phases.at(-1) ?? {}; return Object.fromEntries(Object.entries(p).filter(([k]) => k.endsWith('_ms'))); };
  const step = () => new Promise((resolve) => process.once('message', resolve));
  const timed = async (fn) => { const t0 = performance.now(); const r = await fn(); return { ms: performance.now() - t0, report: r }; };
  const brief = (r) => ({ ok: r.ok, added: r.added, updated: r.updated, removed: r.removed, failed: r.failed, image_requests: r.image_requests, error: r.error });

  const initial = await timed(() => sync.syncNow('manual'));
  process.send({ phase: 'initial', ms: initial.ms, report: brief(initial.report), phases: lastPhases(), mem: Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [k, Math.round(v / 1048576)])), maxRssMb: process.resourceUsage().maxRSS / 1024 });
  if (initialOnly) {
    await sync.stop();
    db.close();
    await client.close();
    return;
  }
  await step();
  // A timed pass (a manual one would go round the group's re-checks, recheck.ts).
  const nochange = await timed(() => sync.syncNow('interval'));
  process.send({ phase: 'nochange', ms: nochange.ms, report: brief(nochange.report), phases: lastPhases() });
  const { refresh } = await step();
  // As enrollment does after its own updates: refreshFace for each; the first starts a sync that
  // also picks up the other changes, the others share one follow-up sync.
  const changed = await timed(() => Promise.all(refresh.map((id) => sync.refreshFace(id))));
  const reports = [...new Set(changed.report)];
  const sum = (k) => reports.reduce((a, r) => a + r[k], 0);
  const total = { syncs: reports.length, ok: reports.every((r) => r.ok), added: sum('added'), updated: sum('updated'), removed: sum('removed'), failed: sum('failed'), image_requests: sum('image_requests') };
  process.send({ phase: 'changed', ms: changed.ms, report: total, maxRssMb: process.resourceUsage().maxRSS / 1024 });
  await sync.stop();
  db.close();
  await client.close();
}

function runChild(kind, args, onMessage) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--child', kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (m) => (m.phase === 'result' ? resolve(m.value) : onMessage?.(m, child)));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(undefined) : reject(new Error(`${kind} child exited ${code}`))));
    child.send(args);
  });
}

if (process.argv[2] === '--child') {
  const kind = process.argv[3];
  process.once('message', async (args) => {
    try {
      if (kind === 'sync') await childSync(args);
      else throw new Error(`faces-sync.mjs: no child ${kind}`);
      process.disconnect();
    } catch (err) {
      console.error(err);
      process.exit(1);
    }
  });
} else {
  await main();
}

async function main() {
  const { values } = parseArgs({ options: { faces: { type: 'string', default: '10000' }, size: { type: 'string', default: '30000' }, concurrency: { type: 'string', default: '8' } } });
  const n = Number(values.faces);
  const size = Number(values.size);
  const concurrency = Number(values.concurrency);
  const { startEmulator } = await import(join(DIST, 'emulator/index.js'));
  const { createServiceClient } = await import(join(DIST, 'client/service-client.js'));
  const { silentLogger } = await import(join(DIST, 'log/logger.js'));
  const workDir = benchWorkDir('ta-bench-faces-');
  if (!workDir) return;
  const work = workDir.dir;
  if (process.env.BENCH_FS) console.log(`folders on ${workDir.how}`);
  if (slowSync.SLOW_SYNC_MS) console.log(`the daemon's every fsync and fdatasync ${slowSync.SLOW_SYNC_MS} ms slower (BENCH_SLOW_SYNC_MS, lib/slow-sync.mjs)`);
  const emu = await startEmulator({ dataDir: join(work, 'emulator'), terminals: [{ terminal_secret: SECRET, group_id: GROUP }], tts: 'tone' });
  try {
    let t0 = performance.now();
    for (let i = 0; i < n; i += 500) {
      emu.seedFaces(GROUP, Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ name: `face-${i + j}`, image: randomJpeg(imageSize(size)) })));
    }
    console.log(`seeded ${n} faces of ~${Math.round(size / 1024)} KB in ${((performance.now() - t0) / 1000).toFixed(1)} s; concurrency ${concurrency}`);
    const imageReqs = () => emu.requests.filter((r) => r.path.endsWith('/image'));

    const emuArgs = { baseUrl: emu.baseUrl, faceBaseUrl: emu.faceBaseUrl };
    // What the first syncs are told the service is: the emulator, or its HTTPS front (BENCH_TLS=1).
    const front = process.env.BENCH_TLS === '1' ? await startTlsFront(emu.baseUrl, work) : undefined;
    if (front?.error) throw new Error(`BENCH_TLS=1: ${front.error}`);
    const via = front
      ? { served: { apiKey: emu.apiKey, baseUrl: front.url(emu.baseUrl), faceBaseUrl: front.url(emu.faceBaseUrl) }, env: { NODE_EXTRA_CA_CERTS: front.caFile } }
      : { served: emu, env: {} };
    if (front) console.log('first syncs over HTTPS (BENCH_TLS=1)');
    const variants = (process.env.VARIANTS ?? '0,pi').split(',');
    const runs = Number(process.env.RUNS ?? 2);
    const summary = [];
    let firstOk = true;
    for (const v of variants) {
      const pi = v === 'pi';
      const budget = pi ? createPiBudget(`ta-bench-faces-${process.pid}`) : null;
      if (pi && !budget) {
        console.log('Pi budget: no cgroup cpu controller can be created here: skipped');
        continue;
      }
      emu.faults.setChaos({ latencyMs: pi ? 0 : Number(v) });
      console.log(pi ? `Pi budget (no added latency; daemon and plain loops each in ${budget.how}):` : `${v} ms service latency:`);
      const rs = [];
      try {
        for (let i = 1; i <= runs; i++) {
          const h0 = { ...front?.handshakes };
          const skip = { ms: NaN, cpuMs: NaN };
          const b = process.env.BENCH_DAEMON_ONLY ? skip : await plainGetLoop(via, work, concurrency, budget, n);
          const h1 = { ...front?.handshakes };
          const bn = process.env.BENCH_DAEMON_ONLY ? skip : await plainGetLoop(via, work, concurrency, budget, n, 'get-node');
          const h2 = { ...front?.handshakes };
          const d = await daemonFirstSync(emu, via, work, n, budget);
          if (front) console.log(`  over https: plain loop ${h1.full - h0.full} whole + ${h1.resumed - h0.resumed} resumed handshakes, node:http loop ${h2.full - h1.full} + ${h2.resumed - h1.resumed}, daemon ${front.handshakes.full - h2.full} + ${front.handshakes.resumed - h2.resumed}; ciphers ${Object.keys(front.ciphers).join(', ')}`);
          const r = { ...d, plainMs: b.ms, plainCpuMs: b.cpuMs, ratio: d.ms / b.ms, nodePlainMs: bn.ms, nodePlainCpuMs: bn.cpuMs, nodeRatio: d.ms / bn.ms };
          rs.push(r);
          console.log(`  run ${i}: plain loop (spawn to done) ${(b.ms / 1000).toFixed(2)} s; node:http loop (spawn to done) ${(bn.ms / 1000).toFixed(2)} s; daemon spawn to index.json naming all ${n}: ${(d.ms / 1000).toFixed(2)} s; ratio ${r.ratio.toFixed(2)}x (target <= 1.15x), daemon / node:http ${r.nodeRatio.toFixed(2)}x; ` +
            `daemon CPU ${(d.cpuMs / 1000).toFixed(2)} s (user ${(d.userMs / 1000).toFixed(2)}), ${(d.cpuMs / n).toFixed(2)} ms per face (plain loop ${(b.cpuMs / n).toFixed(2)}, node:http loop ${(bn.cpuMs / n).toFixed(2)}); peak RSS ${d.peakRssMb.toFixed(1)} MB (target <= 120 MB); ${d.imageRequests} image requests; creating a file there: ${d.createUs.toFixed(0)} µs`);
          console.log(`    daemon timeline, ms from spawn: ${Object.entries(d.timeline).map(([k, t]) => `${k} ${Math.round(t)}`).join(', ')}`);
        }
      } finally {
        budget?.close();
      }
      const line = `  => ${pi ? 'Pi budget' : `${v} ms`}: ratio ${spread(rs.map((r) => r.ratio))}x; daemon ${spread(rs.map((r) => r.ms / 1000), 2, ' s')}, plain loop ${spread(rs.map((r) => r.plainMs / 1000), 2, ' s')}; ` +
        `node:http loop ${spread(rs.map((r) => r.nodePlainMs / 1000), 2, ' s')} (daemon / node:http ${spread(rs.map((r) => r.nodeRatio))}x); ` +
        `CPU ${spread(rs.map((r) => r.cpuMs / n))} ms/face (plain loop ${spread(rs.map((r) => r.plainCpuMs / n))}, node:http loop ${spread(rs.map((r) => r.nodePlainCpuMs / n))}); peak RSS ${spread(rs.map((r) => r.peakRssMb), 1, ' MB')}`;
      console.log(line);
      summary.push(line);
      if (!pi && v === '0' && !(Math.min(...rs.map((r) => r.ratio)) <= 1.15 && median(rs.map((r) => r.peakRssMb)) <= 120)) firstOk = false;
    }
    emu.faults.setChaos({ latencyMs: 0 });
    emu.clearRequests();
    await front?.close();
    if (process.env.BENCH_FIRST_ONLY) {
      // Iterating on the first sync only (not a full run: the re-sync targets are not checked).
      if (!firstOk) process.exitCode = 1;
      return;
    }

    const stateDir = join(work, 'state');
    const results = {};
    let expected = [];
    await runChild('sync', { emu: emuArgs, stateDir, concurrency }, async (m, child) => {
      results[m.phase] = { ...m, imageRequests: imageReqs().map((r) => r.path.split('/').at(-2)) };
      emu.clearRequests();
      if (m.phase === 'initial') child.send({});
      if (m.phase === 'nochange') {
        // 10 changes: 3 added, 2 deleted, 2 renamed (by someone else), 3 images replaced by this agent.
        const client = createServiceClient({ config: serviceConfig(emu), logger: silentLogger(), userAgent: 'bench-operator' });
        const faces = await client.listFaces();
        const img = join(work, 'change.jpg');
        const added = [];
        for (let i = 0; i < 3; i++) {
          writeFileSync(img, randomJpeg(imageSize(size)));
          await client.createFace({ name: `added-${i}`, image: { path: img, contentType: 'image/jpeg' } });
        }
        const after = await client.listFaces();
        const before = new Set(faces.map((f) => f.face_id));
        for (const f of after) if (!before.has(f.face_id)) added.push(f.face_id);
        for (const f of faces.slice(0, 2)) await client.deleteFace(f.face_id);
        const renamed = faces.slice(2, 4).map((f) => f.face_id);
        for (const f of faces.slice(2, 4)) await client.updateFace(f.face_id, { name: `${f.name}-renamed` });
        const refresh = faces.slice(4, 7).map((f) => f.face_id);
        for (const id of refresh) {
          writeFileSync(img, randomJpeg(imageSize(size)));
          await client.updateFace(id, { name: 'replaced', image: { path: img, contentType: 'image/jpeg' } });
        }
        await client.close();
        expected = [...added, ...refresh, ...renamed].sort();
        emu.clearRequests();
        child.send({ refresh });
      }
    });
    const nc = results.nochange;
    const ch = results.changed;
    const got = [...ch.imageRequests].sort();
    const exact = JSON.stringify(got) === JSON.stringify(expected);
    const ok = (c) => (c ? 'OK' : 'MISSED');
    console.log('');
    console.log(`first sync, spawned daemon vs plain loop (no added latency is the one that counts):`);
    for (const l of summary) console.log(l);
    console.log(`re-sync, no changes: ${nc.ms.toFixed(0)} ms (target <= 500 ms) ${ok(nc.ms <= 500)}, ${nc.imageRequests.length} image requests (target 0) ${ok(nc.imageRequests.length === 0)}`);
    console.log(`  phases (ms): ${JSON.stringify(nc.phases)}`);
    console.log(`re-sync after 10 changes: ${ch.ms.toFixed(0)} ms, ${JSON.stringify(ch.report)}; image requests ${got.length} for ${expected.length} changed images and renamed faces, exactly those: ${ok(exact)}`);
    if (!(firstOk && nc.ms <= 500 && nc.imageRequests.length === 0 && exact)) process.exitCode = 1;
  } finally {
    await emu.close();
    workDir.close();
  }
}

function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

// keptUntilEnd: no measured run follows the deletion of another's 10,000 files. On ext4 without a
// journal (this development VM's disk) each new inode is checked against the inodes deleted in the
// last 30 s (recently_deleted in `perf record`: a third of the daemon's CPU after such a deletion),
// so whichever ran right after a deletion paid for it. Disk use: ~900 MB per run and variant (the
// daemon's images and each plain loop's).

/**
 * The plain loop in its own process: list, then GET + write each image; ms from its spawn to its
 * answer. mode 'get': on the agent's client; 'get-node': on node:http alone. Throws unless it wrote `n`.
 */
async function plainGetLoop(via, work, concurrency, budget, n, mode = 'get') {
  const dir = join(work, `plain-${mode}-${Date.now()}`);
  mkdirSync(dir);
  const service = serviceConfig(via.served);
  settleDisk(work);
  const t0 = performance.now();
  const prof = process.env.BENCH_PROF_PLAIN ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_PLAIN}`] : [];
  const child = spawnNode([...prof, fileURLToPath(new URL('./lib/plain-loops.mjs', import.meta.url)), mode], { env: { ...process.env, ...via.env, BENCH_ARGS: JSON.stringify({ service, dir, concurrency }) }, stdio: ['ignore', 'pipe', 'inherit'] }, budget);
  let out = '';
  let cpuMs = NaN;
  const ms = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (!out.includes('\n')) return;
      resolve(performance.now() - t0);
      // Its answer is its last act: its CPU now is the loop's (the process is still there to read).
      try {
        const c = procCpuSplitMs(child.pid);
        cpuMs = c.user + c.sys;
      } catch {
        // already gone
      }
    });
    child.once('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`plain loop (${mode}) exited ${code}`))));
  });
  await new Promise((r) => (child.exitCode !== null ? r() : child.once('close', r)));
  // Its files stay until the end (keptUntilEnd).
  const { count } = JSON.parse(out);
  if (count !== n) throw new Error(`plain loop (${mode}) wrote ${count} of ${n} images`);
  return { ms, cpuMs, count };
}

/** Spawns the daemon with a fresh state_dir; ms from the spawn until index.json names `n` faces. */
async function daemonFirstSync(emu, via, work, n, budget) {
  const dir = join(work, `daemon-${Date.now()}`);
  mkdirSync(dir);
  const config = writeDaemonConfig(dir, via.served, { terminal_secret: SECRET });
  emu.clearRequests();
  const index = join(dir, 'state', 'faces', 'index.json');
  const createUs = createCost(dir);
  settleDisk(work);
  const t0 = performance.now();
  const wall0 = Date.now();
  let readyMs = NaN;
  const extraArgs = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [];
  const daemon = spawnDaemon(dir, config, { budget, extraArgs, env: { ...via.env, ...slowSync } });
  daemon.ready.then(() => { readyMs = performance.now() - t0; }, () => {});
  let lastMtime = 0;
  let ms;
  // A throw (the daemon gone, the 10 minutes over) must not leave it running: the emulator's close
  // would wait for its kept-alive connections.
  try {
    for (;;) {
      if (daemon.child.exitCode !== null) throw new Error(`the daemon exited (${daemon.child.exitCode})`);
      let st;
      try {
        st = statSync(index);
      } catch {
        st = undefined;
      }
      if (st && st.mtimeMs !== lastMtime) {
        lastMtime = st.mtimeMs;
        // Counted, not parsed: parsing 10,000 records every poll would cost the loop's process more.
        if (indexEntries(index) >= n) {
          ms = performance.now() - t0;
          break;
        }
      }
      if (performance.now() - t0 > 600_000) throw new Error('the first sync did not finish in 10 minutes');
      await sleep(20);
    }
    const cpu = procCpuSplitMs(daemon.pid);
    if (process.env.BENCH_THREADS) console.log(`    daemon CPU by thread, ms: ${Object.entries(procThreadCpuMs(daemon.pid)).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')}`);
    const peakRssMb = procPeakRssMb(daemon.pid);
    const images = emu.requests.filter((r) => r.path.endsWith('/image'));
    const list = emu.requests.find((r) => r.method === 'GET' && /\/faces$/.test(r.path));
    // Where the time goes, ms from the spawn (the emulator's clock is this process's).
    const timeline = { ready: readyMs, list: (list?.at ?? NaN) - wall0, first_image: (images[0]?.at ?? NaN) - wall0, last_image: (images.at(-1)?.at ?? NaN) - wall0, index: ms };
    return { ms, cpuMs: cpu.user + cpu.sys, userMs: cpu.user, peakRssMb, imageRequests: images.length, timeline, createUs };
  } finally {
    await daemon.stop();
  }
}
