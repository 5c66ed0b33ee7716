// Soak: the real daemon (dist/main.js run, the unit's flags and environment) kept busy as a
// terminal is for SOAK_MINUTES (default 60), and watched for what only time shows: memory, file
// descriptors or threads that grow, files lost, a cache that drifts from the group, a daemon that
// stops. Not part of `npm run bench` (it is long): `npm run build && node test/bench/soak.mjs`, or
// `npm run bench -- soak`.
// Every CYCLE_SECONDS (default 30): FILES (25) face images of ~30 KB dropped into enroll/faces/
// (3 of them names enrolled before, with new pixels: updates), a knowledge file edited and every
// third cycle one deleted, two phrases spoken through the control socket (one new, one from the
// TTS cache) on ALSA's null plugin, the console's session, face list and a thumbnail fetched, and
// an operator (another client of the service) deleting the faces enrolled two cycles before and
// renaming one, so that the group keeps its size. Throughout: the service answers with light
// chaos (2 % 5xx, 1 % dropped connections, 2 to 10 ms of latency), and every eighth cycle it is
// gone for OUTAGE_SECONDS (20; every connection dropped); Prometheus scrapes /metrics every 15 s,
// `status` is asked every 15 s, an event stream (GET /events) stays open, syncs run every 15 s.
// Measured: the daemon's RSS at the end of each cycle (its work done, before the next drop),
// against its own RSS after the warm-up cycles (the baseline, same run). It is a saw (r24: 74 to
// 91 MB, 3 minutes a tooth: V8's old space fills with the images' garbage until a full GC, which
// gives the pages back), so what is compared is its floor, the lowest RSS
// in the last quarter of the cycles against the second's (since r48 the median of each quarter's
// tooth bottoms, lib/rss-floor.mjs; its lower quartile before): a leak lifts the floor.
// Also the slope of a line through the second half's figures (MB per hour), and the same floors of
// V8's used heap (nodejs_heap_size_used_bytes in the scrapes): the live heap, where a leak of
// JavaScript objects shows before RSS does (r24: a phrase's pipeline kept for good, 17 to 40 KB).
// Targets: floor ratios <= 1.05, peak <= 150 MB, file descriptors and threads in the last quarter no
// more than after the warm-up (+2), and nothing lost: every dropped file in done/faces/ (none in failed/),
// the knowledge entries equal to the files, index.json naming exactly the group, exit 0 on SIGTERM.
import { randomBytes } from 'node:crypto';
import { randomJpeg } from './lib/images.mjs';
import { floorOf, lowerQuartile } from './lib/rss-floor.mjs';
import { createServer, request } from 'node:http';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { indexEntries, median, procCpuMs, procFdCount, procPeakRssMb, procRssMb, procThreadCount, procWriteBytes, spawnDaemon, writeDaemonConfig, ROOT } from './lib/daemon-run.mjs';

const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { createServiceClient } = await import(join(ROOT, 'dist/client/service-client.js'));
const { controlClient } = await import(join(ROOT, 'dist/control/control-client.js'));
const { openEventStream } = await import(join(ROOT, 'dist/events/sse-client.js'));
const { silentLogger } = await import(join(ROOT, 'dist/log/logger.js'));

const MINUTES = Number(process.env.SOAK_MINUTES ?? 60);
const CYCLE_MS = Number(process.env.CYCLE_SECONDS ?? 30) * 1000;
const FILES = Number(process.env.FILES ?? 25);
const OUTAGE_MS = Number(process.env.OUTAGE_SECONDS ?? 20) * 1000;
const CYCLES = Math.max(8, Math.round((MINUTES * 60_000) / CYCLE_MS));
// SOAK_GROUP: the faces seeded in the group before the daemon starts (a large group: 10000).
const GROUP_SIZE = Number(process.env.SOAK_GROUP ?? 300);
const LIGHT_CHAOS = { errorRate: 0.02, dropRate: 0.01, latencyMs: 2, latencyJitterMs: 8, seed: 11 };

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-soak-'));
const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

const emulator = await startEmulator({ port: 0, tts: 'tone', chaos: LIGHT_CHAOS, requestLogLimit: 1000 });
const terminal = emulator.terminals[0];
emulator.seedFaces(terminal.group_id, Array.from({ length: GROUP_SIZE }, (_, i) => ({ name: `seed-${i}`, image: randomJpeg(2048) })));
const [metricsPort, consolePort] = [await freePort(), await freePort()];
const config = writeDaemonConfig(dir, emulator, terminal, `faces:
  sync_interval: 15s
audio:
  output_device: "null"
  input_device: "null"
metrics:
  listen: 127.0.0.1:${metricsPort}
console:
  listen: 127.0.0.1:${consolePort}
`);
const enroll = join(dir, 'enroll');
const logFile = join(dir, 'daemon.log');
// No sound card here: ALSA's null plugin as the default device (speaker opens "default" as it loads).
writeFileSync(join(dir, 'asound.conf'), 'pcm.!default { type null }\n');
const alsaEnv = { ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${join(dir, 'asound.conf')}` };
// SOAK_NODE_ARGS: node flags for the daemon, e.g. `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR`
// to compare heap snapshots taken cycles apart (kill -USR2 PID; the PID is printed).
const extraArgs = (process.env.SOAK_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const daemon = spawnDaemon(dir, config, { stdout: 'pipe', env: alsaEnv, extraArgs });
daemon.child.stdout.on('data', (b) => appendFileSync(logFile, b));
await daemon.ready;
const pid = daemon.pid;
console.log(`daemon pid ${pid}, folder ${dir}`);
const control = controlClient(join(dir, 'ctl.sock'), { timeoutMs: 120_000 });
const operator = createServiceClient({
  config: { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: terminal.terminal_secret, api_key: emulator.apiKey, request_timeout: 30_000, ca_file: '', allow_insecure_http: false, retries: 6, other_auth: 'none' },
  logger: silentLogger(), userAgent: 'soak-operator',
});

const events = {};
const stream = openEventStream({ socketPath: join(dir, 'ctl.sock'), onEvent: (e) => (events[e.type] = (events[e.type] ?? 0) + 1) });
await stream.ready;

function httpGet(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject).end();
  });
}

const problems = [];
const counts = { scrapes: 0, statuses: 0, said: 0, sayFailed: 0, consolePages: 0, operatorChanges: 0 };
const started = Date.now();
const samples = []; // every 5 s
const settled = []; // at each cycle's end
const sampleNow = () => ({ at: Date.now(), rss: procRssMb(pid), fds: procFdCount(pid), threads: procThreadCount(pid), cpuMs: procCpuMs(pid), written: procWriteBytes(pid) });
// A daemon killed by a signal has no exit code: signalCode says it (a crash gives no log line).
const gone = () => (daemon.child.exitCode !== null || daemon.child.signalCode !== null ? `the daemon exited (${daemon.child.signalCode ?? daemon.child.exitCode})` : undefined);
const sampler = setInterval(() => {
  try {
    samples.push(sampleNow());
  } catch (e) {
    // Between its death and its reaping /proc/PID has no memory figures; the cycle says why.
    problems.push(gone() ?? `sampling the daemon: ${e.message}`);
  }
}, 5000);
const heapUsed = []; // [ms since start, MB] from each scrape: its floor is the live heap (after full GCs)
const scraper = setInterval(() => {
  httpGet(metricsPort, '/metrics').then((r) => {
    if (r.status !== 200) return problems.push(`/metrics answered ${r.status}`);
    counts.scrapes++;
    const m = /^nodejs_heap_size_used_bytes (\d+)/m.exec(r.body.toString());
    if (m) heapUsed.push([Date.now() - started, Number(m[1]) / 1048576]);
  }, (e) => problems.push(`/metrics: ${e.message}`));
  control.status().then(() => counts.statuses++, (e) => problems.push(`status: ${e.message}`));
}, 15_000);

async function consoleVisit() {
  const session = await httpGet(consolePort, '/api/session');
  const cookie = String(session.headers['set-cookie'] ?? '').split(';')[0];
  const faces = JSON.parse((await httpGet(consolePort, '/api/faces', { cookie })).body);
  const thumb = faces.faces?.[0]?.thumb_url;
  if (thumb) await httpGet(consolePort, thumb, { cookie });
  counts.consolePages += 1;
}

const say = (text) => control.say({ text }).then(() => counts.said++, () => counts.sayFailed++);
const enrolledBy = []; // names enrolled per cycle
let dropped = 0;
let deletedUpTo = 0; // enrolledBy[0 .. deletedUpTo) deleted by the operator
for (const kind of ['faces', 'knowledge']) mkdirSync(join(enroll, kind), { recursive: true });
for (let c = 0; c < CYCLES; c++) {
  const cycleStart = Date.now();
  const outage = c % 8 === 5;
  if (outage) emulator.faults.setChaos({ dropRate: 1 });
  const names = Array.from({ length: FILES - 3 }, (_, i) => `c${c}-p${i}`);
  const again = c >= 2 ? enrolledBy[c - 1].slice(0, 3) : Array.from({ length: 3 }, (_, i) => `c${c}-x${i}`);
  for (const n of [...names, ...again]) {
    writeFileSync(join(enroll, `.${n}.part`), randomJpeg(30 * 1024));
    // A whole file appears under its name at once, as an operator's `mv` or scp's rename does.
    renameSync(join(enroll, `.${n}.part`), join(enroll, 'faces', `${n}.jpg`));
    dropped += 1;
  }
  enrolledBy.push(names);
  writeFileSync(join(enroll, 'knowledge', `k${c % 5}.md`), `# entry ${c % 5}\n\nedited in cycle ${c}: ${randomBytes(64).toString('hex')}\n`);
  if (c % 3 === 2) rmSync(join(enroll, 'knowledge', `k${(c + 2) % 5}.md`), { force: true });
  const spoken = Promise.all([say(`cycle ${c}`), say('welcome')]);
  const visit = consoleVisit().catch((e) => problems.push(`console: ${e.message}`));
  if (outage) {
    await sleep(OUTAGE_MS);
    emulator.faults.setChaos(LIGHT_CHAOS);
  } else if (c >= 2) {
    // The operator removes what the agent enrolled two cycles before (and before, after an
    // outage), and renames a seeded face.
    const byName = new Map((await operator.listFaces()).map((f) => [f.name, f.face_id]));
    for (const n of enrolledBy.slice(deletedUpTo, c - 1).flat()) {
      const id = byName.get(n);
      if (id) await operator.deleteFace(id).then(() => counts.operatorChanges++, (e) => problems.push(`operator delete: ${e.message}`));
    }
    deletedUpTo = c - 1;
    const seeded = byName.get(`seed-${c % GROUP_SIZE}`) ?? byName.get(`seed-${c % GROUP_SIZE}-r`);
    if (seeded) await operator.updateFace(seeded, { name: `seed-${c % GROUP_SIZE}-r` }).then(() => counts.operatorChanges++, (e) => problems.push(`operator rename: ${e.message}`));
  }
  await Promise.all([spoken, visit]);
  await sleep(Math.max(0, cycleStart + CYCLE_MS - Date.now()));
  if (gone()) throw new Error(`${gone()} in cycle ${c + 1}, ${((Date.now() - started) / 60_000).toFixed(1)} min in; its log: ${logFile}`);
  settled.push({ cycle: c, ...sampleNow() });
  const s = settled.at(-1);
  process.stdout.write(`cycle ${c + 1}/${CYCLES}: RSS ${s.rss.toFixed(1)} MB, fds ${s.fds}, threads ${s.threads}, done ${countDone()} of ${dropped}${outage ? ' (outage)' : ''}\n`);
}
clearInterval(scraper);

// The end: the service whole again, everything dropped must be done and the cache equal the group.
emulator.faults.setChaos({});
function countDone() {
  try {
    return readdirSync(join(enroll, 'done', 'faces')).filter((f) => !f.endsWith('.json')).length;
  } catch {
    return 0;
  }
}
const deadline = Date.now() + 300_000;
while (countDone() < dropped && Date.now() < deadline) await sleep(1000);
await control.syncFaces();
const groupNow = emulator.state.faces(terminal.group_id).length;
const knowledgeFiles = readdirSync(join(enroll, 'knowledge')).filter((f) => f.endsWith('.md')).map((f) => f.replace(/\.md$/, '')).sort();
const knowledgeEntries = emulator.state.knowledge().map((k) => k.id).sort();
const failed = (() => {
  try {
    return readdirSync(join(enroll, 'failed', 'faces')).length;
  } catch {
    return 0;
  }
})();
clearInterval(sampler);
const peak = procPeakRssMb(pid);
const last = sampleNow();
const indexKb = statSync(join(dir, 'state', 'faces', 'index.json')).size / 1024;
const cpuShare = (last.cpuMs / (Date.now() - started)) * 100;
stream.close();
await daemon.stop();
const exitCode = daemon.child.exitCode;
await operator.close();
await emulator.close();

// Warm-up: the first quarter of the cycles (JIT, caches, SQLite's pages, the TTS cache filling).
const q = Math.floor(settled.length / 4);
/** Least-squares slope of [x, y] points. */
function linearSlope(points) {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}
// A quarter's floor: the median of the saw's bottoms in it (lib/rss-floor.mjs says why not the
// lowest end, nor the quarter's lower quartile, printed beside it as before r48).
const rssEnds = settled.map((s) => s.rss);
const warm = floorOf(rssEnds, q, 2 * q);
const end = floorOf(rssEnds, 3 * q, rssEnds.length);
const warmQuartile = lowerQuartile(rssEnds.slice(q, 2 * q));
const endQuartile = lowerQuartile(rssEnds.slice(3 * q));
const secondHalf = settled.slice(Math.floor(settled.length / 2));
const slope = linearSlope(secondHalf.map((s) => [(s.at - started) / 3_600_000, s.rss]));
// The same quarters of the run by time, for the scrapes' heap figures.
const runMs = settled.at(-1).at - started;
const heapFloor = (from, to) => Math.min(...heapUsed.filter(([t]) => t >= from * runMs && t < to * runMs).map(([, mb]) => mb));
const heapWarm = heapFloor(0.25, 0.5);
const heapEnd = heapFloor(0.75, 1.01);
// What the daemon wrote to disk over the second half (a Pi's SD card wears by the bytes written).
const writtenPerHourMb = secondHalf.length < 2 || secondHalf[0].written === null ? undefined
  : ((secondHalf.at(-1).written - secondHalf[0].written) / 1048576) / ((secondHalf.at(-1).at - secondHalf[0].at) / 3_600_000);
// The fewest at the last quarter's cycle ends against the most at the second's: a cycle's end may
// catch a refresh with a file or two open (r26: 39 at the very end of a run whose ends showed 33
// to 41 throughout); a leak raises the floor.
const fdsWarm = Math.max(...settled.slice(q, 2 * q).map((s) => s.fds));
const threadsWarm = Math.max(...settled.slice(q, 2 * q).map((s) => s.threads));
const fdsEnd = Math.min(...settled.slice(-q).map((s) => s.fds));
const threadsEnd = Math.min(...settled.slice(-q).map((s) => s.threads));
const errorLines = readFileSync(logFile, 'utf8').split('\n').filter((l) => /"level":"(error|fatal)"/.test(l));
const ok = (b) => (b ? 'met' : 'MISSED');
const checks = [
  [`RSS floor (the median of the saw's bottoms at the cycle ends) in the last quarter ${end.toFixed(1)} MB against ${warm.toFixed(1)} after the warm-up: ${(end / warm).toFixed(3)}x (target <= 1.05); the quarters' lower quartiles, as before r48: ${endQuartile.toFixed(1)} against ${warmQuartile.toFixed(1)} MB, ${(endQuartile / warmQuartile).toFixed(3)}x`, end / warm <= 1.05],
  [`V8's used heap, its floor (the live heap after full GCs) in the last quarter ${heapEnd.toFixed(1)} MB against ${heapWarm.toFixed(1)} in the second: ${(heapEnd / heapWarm).toFixed(3)}x (target <= 1.05)`, heapEnd / heapWarm <= 1.05],
  [`peak RSS ${peak.toFixed(1)} MB (target <= 150)`, peak <= 150],
  [`file descriptors: the fewest at the last quarter's cycle ends ${fdsEnd} (the last ${last.fds}), the most after the warm-up ${fdsWarm}`, fdsEnd <= fdsWarm + 2],
  [`threads: the fewest at the last quarter's cycle ends ${threadsEnd} (the last ${last.threads}), the most after the warm-up ${threadsWarm}`, threadsEnd <= threadsWarm + 2],
  [`enrolled ${countDone()} of ${dropped} dropped files, ${failed} in failed/faces`, countDone() === dropped && failed === 0],
  [`index.json names ${indexEntries(join(dir, 'state', 'faces', 'index.json'))} faces, the group holds ${groupNow}`, indexEntries(join(dir, 'state', 'faces', 'index.json')) === groupNow],
  [`knowledge entries [${knowledgeEntries}] for files [${knowledgeFiles}]`, knowledgeEntries.join() === knowledgeFiles.join()],
  [`the daemon exited ${exitCode} on SIGTERM`, exitCode === 0],
  [`problems seen by the soak's clients: ${problems.length}${problems.length ? ` (${problems.slice(0, 3).join('; ')})` : ''}`, problems.length === 0],
];
console.log(`\nsoak: ${CYCLES} cycles of ${CYCLE_MS / 1000} s (${((Date.now() - started) / 60_000).toFixed(1)} min), ${dropped} files, ${counts.said} phrases spoken (${counts.sayFailed} failed, in outages), ${counts.scrapes} scrapes, ${counts.statuses} status calls, ${counts.consolePages} console visits, ${counts.operatorChanges} operator changes`);
console.log(`RSS at the cycles' ends: median ${median(settled.map((s) => s.rss)).toFixed(1)} MB, ${Math.min(...settled.map((s) => s.rss)).toFixed(1)} to ${Math.max(...settled.map((s) => s.rss)).toFixed(1)}; slope over the second half ${slope.toFixed(2)} MB per hour; CPU ${cpuShare.toFixed(2)} % of one core on average; events seen ${JSON.stringify(events)}`);
if (writtenPerHourMb !== undefined) console.log(`disk: the daemon wrote ${writtenPerHourMb.toFixed(0)} MB per hour over the second half (/proc/PID/io write_bytes), ${((writtenPerHourMb * 1024) / ((3_600_000 / CYCLE_MS) * FILES)).toFixed(0)} KB per file dropped, its index.json ${indexKb.toFixed(0)} KB`);
console.log(`error lines in the daemon's log: ${errorLines.length}${errorLines.length ? `, first: ${errorLines[0].slice(0, 300)}` : ''}`);
for (const [text, pass] of checks) console.log(`${ok(pass)}: ${text}`);
// SOAK_SAMPLES=FILE keeps every sample (5 s apart, and each cycle's end) for a plot.
if (process.env.SOAK_SAMPLES) writeFileSync(process.env.SOAK_SAMPLES, JSON.stringify({ samples, settled }));
if (checks.some(([, pass]) => !pass)) {
  process.exitCode = 1;
  console.log(`the daemon's folder and log are kept: ${dir}`);
} else rmSync(dir, { recursive: true, force: true });
