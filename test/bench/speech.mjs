// Speech latency benchmark: `npx tsc -p tsconfig.json && node test/bench/speech.mjs [runs]`
//
// 1. Streaming: the emulator sends a 10 s utterance (16 kHz mono, 320 KB) at real-time speed
//    (32 KB/s, in 1.6 KB pieces). Measured: request -> first audio bytes at the agent (TTFB), and
//    request -> first PCM frame written to the ALSA device (reported by the player process).
//    Target: first frame within 50 ms of the first audio bytes. Baseline in the same run: a plain
//    HTTP loop reading the first body byte of the same request (the emulator's own TTFB).
// 2. Cache hit: the same phrase again, request -> first frame; target <= 50 ms. Baseline: a plain
//    open + read of the cached file's first 64 KB.
// 3. CPU per second of audio played (a terminal that greets every face it sees speaks all day):
//    the agent's (this process, where the speech component runs, and its player process) over
//    PLAY_RUNS cache hits, against `aplay` playing the same cached WAV to the same device, in turn.
//    ALSA's null plugin takes samples as fast as they come, so this is the work, not the wait.
// Output devices are ALSA's `null` plugin (no sound card needed).
import { mkdtempSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createServiceClient } from '../../dist/client/service-client.js';
import { createSpeech } from '../../dist/audio/speech.js';
import { openDatabase } from '../../dist/db/database.js';
import { silentLogger } from '../../dist/log/logger.js';
import { procCpuMs } from './lib/daemon-run.mjs';
import { spawnSync } from 'node:child_process';

const RUNS = Number(process.argv[2] ?? 4);
const CACHE_RUNS = 20;
const BYTES_PER_SEC = 32_000; // real time for 16 kHz mono 16-bit
// The emulator's tone engine makes 60 ms of audio per character at speed 50: 167 chars = 10 s.
const TEXT = (i) => `run ${String(i).padStart(3, '0')} `.padEnd(167, 'x');

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-speech-'));
const conf = join(dir, 'asound.conf');
writeFileSync(conf, 'pcm.!default { type null }\n');
const env = { ...process.env, ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${conf}` };

// The emulator runs in its own process, as a real service would: its slow-body timers must not
// share the agent's event loop.
const emuProc = spawn(process.execPath, [fileURLToPath(new URL('../../dist/main.js', import.meta.url)), 'emulator', '--port', '0', '--json', '--tts', 'tone', '--slow-body', String(BYTES_PER_SEC)], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = await once(createInterface({ input: emuProc.stdout }), 'line');
const emulator = { baseUrl: JSON.parse(line).base_url, faceBaseUrl: JSON.parse(line).face_base_url };
const serviceConfig = {
  base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, request_timeout: 15_000, ca_file: '',
  allow_insecure_http: false, retries: 0, other_auth: 'none',
};
const realClient = createServiceClient({ config: serviceConfig, logger: silentLogger(), userAgent: 'bench' });
// Records when the first audio bytes reach the agent, without changing the stream.
let firstBytesAt;
const client = {
  async synthesize(req, opts) {
    const res = await realClient.synthesize(req, opts);
    const tap = new Transform({
      transform(chunk, _e, cb) {
        firstBytesAt ??= performance.now();
        cb(null, chunk);
      },
    });
    res.body.on('error', (e) => tap.destroy(e));
    return { ...res, body: res.body.pipe(tap) };
  },
};
const db = openDatabase({ path: join(dir, 'agent.db') });
const speech = createSpeech({
  config: { state_dir: dir, tts: { voice: '', volume_ratio: 50, speed_ratio: 50, pitch_ratio: 50, cache_size: 64 << 20 }, audio: { output_device: 'default' }, service: serviceConfig },
  logger: silentLogger(), db, client, metrics: new Registry(), playerOptions: { env },
});
await speech.start();

async function plainTtfb(text) {
  const t0 = performance.now();
  const res = await request(`${emulator.baseUrl}/tts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
  for await (const _ of res.body) break;
  return performance.now() - t0;
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
};
const f = (x) => x.toFixed(1);

// Let the warm player process start, and the JIT see the paths once.
await new Promise((r) => setTimeout(r, 1000));
const rows = [];
for (let i = 0; i < RUNS; i++) {
  const baseline = await plainTtfb(TEXT(1000 + i));
  firstBytesAt = undefined;
  const t0 = performance.now();
  const r = await speech.say({ text: TEXT(i) });
  const ttfb = firstBytesAt - t0;
  rows.push({ baseline, ttfb, first: r.first_frame_ms, gap: r.first_frame_ms - ttfb, audio: r.audio_ms, total: performance.now() - t0 });
}

console.log(`speech streaming: ${RUNS} utterances of ${rows[0].audio} ms audio streamed at ${BYTES_PER_SEC} B/s`);
console.log('run  plain_ttfb_ms  agent_ttfb_ms  first_frame_ms  first_frame-ttfb_ms  ratio_to_plain_ttfb  total_ms');
rows.forEach((r, i) => console.log(`${String(i).padEnd(4)} ${f(r.baseline).padStart(13)}  ${f(r.ttfb).padStart(13)}  ${f(r.first).padStart(14)}  ${f(r.gap).padStart(19)}  ${(r.first / r.baseline).toFixed(2).padStart(19)}  ${f(r.total).padStart(8)}`));
const gap = stats(rows.map((r) => r.gap));
const ratio = stats(rows.map((r) => r.first / r.baseline));
console.log(`first frame after first audio bytes: median ${f(gap.median)} ms, max ${f(gap.max)} ms (target <= 50 ms) -> ${gap.max <= 50 ? 'PASS' : 'FAIL'}`);
console.log(`first frame / plain TTFB: median ${ratio.median.toFixed(2)}x, max ${ratio.max.toFixed(2)}x`);

// Cache hits: the phrases again; the emulator is not asked.
const cacheFile = join(dir, 'tts', readdirSync(join(dir, 'tts')).find((n) => n.endsWith('.wav')));
const hits = [];
const reads = [];
for (let i = 0; i < CACHE_RUNS; i++) {
  const t1 = performance.now();
  const fh = await open(cacheFile, 'r');
  await fh.read(Buffer.alloc(65536), 0, 65536, 0);
  await fh.close();
  reads.push(performance.now() - t1);
  const r = await speech.say({ text: TEXT(i % RUNS) });
  if (r.source !== 'cache') throw new Error(`expected a cache hit, got ${r.source}`);
  hits.push(r.first_frame_ms);
}
const hit = stats(hits);
const read = stats(reads);
console.log(`cache hit: request -> first frame median ${f(hit.median)} ms, max ${f(hit.max)} ms over ${CACHE_RUNS} (target <= 50 ms) -> ${hit.max <= 50 ? 'PASS' : 'FAIL'}`);
console.log(`cache hit baseline (plain open+read 64 KB of the cached WAV): median ${read.median.toFixed(2)} ms; ratio ${(hit.median / read.median).toFixed(1)}x`);

// 3. CPU per second of audio: the agent (this process less the emulator's, plus its live player
// process) against aplay of the same file (bash's `time` of its children), PLAY_RUNS each.
const PLAY_RUNS = Number(process.env.PLAY_RUNS ?? 10);
const agentCpu = () => procCpuMs(process.pid) - procCpuMs(emuProc.pid);
let playedMs = 0;
const c0 = agentCpu();
for (let i = 0; i < PLAY_RUNS; i++) playedMs += (await speech.say({ text: TEXT(i % RUNS) })).audio_ms;
const agentMsPerSec = (agentCpu() - c0) / (playedMs / 1000);
const timed = spawnSync('bash', ['-c', `TIMEFORMAT='%U %S'; time (for i in $(seq ${PLAY_RUNS}); do aplay -q -D default "$0"; done)`, cacheFile], { env, encoding: 'utf8' });
const [u, sy] = timed.stderr.trim().split('\n').at(-1).split(' ').map(Number);
const aplayMsPerSec = timed.status === 0 && Number.isFinite(u + sy) ? ((u + sy) * 1000) / (playedMs / 1000) : undefined;
console.log(`CPU per second of audio played (cache hits, ${PLAY_RUNS} phrases of ${(playedMs / PLAY_RUNS / 1000).toFixed(1)} s): the agent ${agentMsPerSec.toFixed(2)} ms (its process and its player's)` +
  (aplayMsPerSec === undefined ? `; aplay: could not be timed (${timed.stderr.trim().split('\n')[0]})` : `, aplay of the same file ${aplayMsPerSec.toFixed(2)} ms: ${(agentMsPerSec / aplayMsPerSec).toFixed(1)}x; on a core a quarter of this one, ${((agentMsPerSec * 4) / 10).toFixed(2)} % of it while speaking`));

await speech.stop();
await realClient.close();
emuProc.kill('SIGTERM');
db.close();
rmSync(dir, { recursive: true, force: true });
