// Enrollment benchmark: 1,000 face images copied into faces/ at once, uploaded by the real
// enrollment (compiled, in its own process so its peak RSS is its own) against the emulator,
// next to a baseline measured in the same run: a plain loop posting the same files through the
// same client with the same concurrency. Run: npm run build && node test/bench/enroll.mjs [COUNT]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startEmulator } from '../../dist/emulator/index.js';
import { createServiceClient } from '../../dist/client/service-client.js';
import { configSchema } from '../../dist/config/schema.js';
import { silentLogger } from '../../dist/log/logger.js';

const COUNT = Number(process.argv[2] ?? 1000);
const CONCURRENCY = 4;
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 20);
const IMAGE_BYTES = 32 * 1024;
const WORKER = new URL('../enroll/fixtures/enroll-worker.mjs', import.meta.url).pathname;

const root = await mkdtemp(join(tmpdir(), 'ta-bench-enroll-'));
const terminals = [
  { terminal_secret: `ts_${randomBytes(16).toString('hex')}`, group_id: 'bench-baseline' },
  { terminal_secret: `ts_${randomBytes(16).toString('hex')}`, group_id: 'bench-enroll' },
];
// Latency stands in for a real network: with none, both sides measure only local CPU.
const emulator = await startEmulator({ port: 0, terminals, chaos: { latencyMs: LATENCY_MS } });

const source = join(root, 'source');
await mkdir(source);
const names = Array.from({ length: COUNT }, (_, i) => `person-${String(i).padStart(4, '0')}`);
for (const n of names) {
  await writeFile(join(source, `${n}.jpg`), Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(IMAGE_BYTES - 6), Buffer.from([0xff, 0xd9])]));
}

function serviceConfig(t) {
  return { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: t.terminal_secret, request_timeout: '15s' };
}

// ---- Baseline: a plain loop, CONCURRENCY posts at a time.
const client = createServiceClient({ config: configSchema.parse({ service: serviceConfig(terminals[0]), state_dir: join(root, 'x') }).service, logger: silentLogger(), userAgent: 'bench' });
const t0 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
  while (next < names.length) {
    const n = names[next++];
    await client.createFace({ name: n, image: { path: join(source, `${n}.jpg`), contentType: 'image/jpeg' } }, { retries: 0 });
  }
}));
const baselineMs = performance.now() - t0;
const baselinePosts = emulator.requests.filter((r) => r.method === 'POST' && r.path === '/v1/api/faces');
await client.close();

// ---- The enrollment, in its own process.
const stateDir = join(root, 'state');
const config = configSchema.parse({
  service: serviceConfig(terminals[1]),
  state_dir: stateDir,
  enroll: { upload_concurrency: CONCURRENCY },
  control: { socket: join(root, 'control.sock') },
});
const worker = spawn(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : []), WORKER], {
  env: { ...process.env, ENROLL_WORKER_CONFIG: JSON.stringify(config), ENROLL_WORKER_EXIT_WHEN: String(COUNT) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let buffered = '';
const lines = [];
let onLine = () => {};
worker.stdout.on('data', (d) => {
  buffered += d.toString();
  let i;
  while ((i = buffered.indexOf('\n')) >= 0) {
    lines.push(JSON.parse(buffered.slice(0, i)));
    buffered = buffered.slice(i + 1);
    onLine();
  }
});
const waitLine = (event) => new Promise((resolve) => {
  const check = () => {
    const l = lines.find((x) => x.event === event);
    if (l) resolve(l);
  };
  onLine = check;
  check();
});
await waitLine('ready');
const enrollStartLog = emulator.requests.length;
const c0 = performance.now();
const copyStartedAt = Date.now();
for (const n of names) await copyFile(join(source, `${n}.jpg`), join(config.enroll.dir, 'faces', `${n}.jpg`));
const copyMs = performance.now() - c0;
const finished = await waitLine('finished');
const endToEndMs = Date.now() - copyStartedAt;

// ---- Figures.
const posts = emulator.requests.slice(enrollStartLog).filter((r) => r.method === 'POST' && r.path === '/v1/api/faces');
const lists = emulator.requests.slice(enrollStartLog).filter((r) => r.method === 'GET' && r.path === '/v1/api/faces');
const uploadPhaseMs = Math.max(...posts.map((r) => r.at + r.durationMs)) - Math.min(...posts.map((r) => r.at));
const faces = emulator.state.faces(terminals[1].group_id);
const perName = new Map();
for (const f of faces) perName.set(f.name, (perName.get(f.name) ?? 0) + 1);
const allOnce = names.every((n) => perName.get(n) === 1) && faces.length === COUNT;

const db = new Database(join(stateDir, 'agent.db'), { readonly: true });
const rows = db.prepare("SELECT name, source_path, started_at, state FROM outbox WHERE kind = 'faces'").all();
db.close();
const doneDir = join(config.enroll.dir, 'done', 'faces');
const latencies = [];
for (const r of rows) {
  const st = await stat(join(doneDir, `${r.name}.jpg`));
  latencies.push(r.started_at - st.mtimeMs);
}
latencies.sort((a, b) => a - b);
const median = latencies[Math.floor(latencies.length / 2)];
const doneJson = (await readdir(doneDir)).filter((f) => f.endsWith('.json')).length;

const ratio = baselineMs / uploadPhaseMs;
const avg = (rs) => rs.reduce((n, r) => n + r.durationMs, 0) / rs.length;
// Time per upload slot beyond the service's own answer time: what each side adds per file.
const overhead = (ms, rs) => (ms * CONCURRENCY) / rs.length - avg(rs);
// Mean number of requests the service had open over the phase: CONCURRENCY when no slot idles.
const inFlight = (rs, ms) => rs.reduce((n, r) => n + r.durationMs, 0) / ms;
const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log(`enroll benchmark: ${COUNT} face images of ${IMAGE_BYTES / 1024} KB, concurrency ${CONCURRENCY}, emulator latency ${LATENCY_MS} ms, settle_time ${config.enroll.settle_time} ms`);
console.log(`  all uploaded once:           ${allOnce ? 'yes' : 'NO'} (${faces.length} faces on the service, ${doneJson} done/*.json, ${posts.length} POSTs, ${lists.length} listings)`);
console.log(`  baseline (plain loop):       ${fmt(baselineMs)}  ${(COUNT / (baselineMs / 1000)).toFixed(0)} files/s`);
console.log(`  enrollment upload phase:     ${fmt(uploadPhaseMs)}  ${(COUNT / (uploadPhaseMs / 1000)).toFixed(0)} files/s  ratio ${ratio.toFixed(2)} (target >= 0.8)`);
console.log(`  per upload, beyond the answer: baseline ${overhead(baselineMs, baselinePosts).toFixed(1)} ms, enrollment ${overhead(uploadPhaseMs, posts).toFixed(1)} ms (answer ${avg(baselinePosts).toFixed(1)} / ${avg(posts).toFixed(1)} ms)`);
console.log(`  requests in flight (mean):   baseline ${inFlight(baselinePosts, baselineMs).toFixed(2)}, enrollment ${inFlight(posts, uploadPhaseMs).toFixed(2)} of ${CONCURRENCY}`);
if (process.env.BENCH_BINS) {
  const first = Math.min(...posts.map((r) => r.at));
  const bins = [];
  for (const r of posts) bins[Math.floor((r.at - first) / 1000)] = (bins[Math.floor((r.at - first) / 1000)] ?? 0) + 1;
  console.log(`  POSTs started per second:    ${Array.from(bins, (n) => n ?? 0).join(' ')}`);
}
console.log(`  enrollment end to end:       ${fmt(endToEndMs)}  (copy ${fmt(copyMs)}, includes settle_time and result files)`);
console.log(`  last write -> upload start:  median ${fmt(median)}, p10 ${fmt(latencies[Math.floor(latencies.length * 0.1)])}, p90 ${fmt(latencies[Math.floor(latencies.length * 0.9)])}`);
console.log(`  enrollment CPU (process):    ${(finished.cpuMs / COUNT).toFixed(2)} ms per file (${fmt(finished.cpuMs)} in all, start to stop)`);
console.log(`  peak RSS of the enrollment:  ${(finished.peakRssBytes / 1024 / 1024).toFixed(1)} MB (target <= 150 MB)`);
await emulator.close();
await rm(root, { recursive: true, force: true });
process.exitCode = allOnce ? 0 : 1;
