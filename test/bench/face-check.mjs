// Face check benchmark: a burst of COUNT real photos (1280 x 960 JPEGs made from the labelled
// set's two public-domain portraits, each at its own size and place: test/fixtures/faces/) copied
// at once into enroll/faces/ of the real daemon (dist/main.js run), with the face check on, against
// the same daemon with the check off and a plain loop POSTing the same files (its own process, 4 at
// a time, as test/bench/enroll.mjs). Measured from outside the daemon: its CPU (utime+stime from
// /proc/PID/stat, the worker thread included), peak memory (VmHWM), the time until the last
// original is in done/faces/, and how long `status` takes on the control socket during the burst
// (asked every 250 ms), and whether speech plays without a gap meanwhile: the daemon says 10 s
// phrases one after the other (each its own text, from the emulator's /tts) to ALSA's `file`
// plugin writing into a FIFO that lib/audio-sink.mjs reads at the sample rate, as a sound card
// with a 2 s buffer plays (an underrun: the device ran dry inside a phrase). Variants: unconfined,
// and "Pi budget": the daemon and the plain loop each confined to a quarter of one core (cgroup
// cpu.max 25000/100000, lib/daemon-run.mjs), where the cgroup's throttled periods are shown too.
// Targets (issue 70): the check costs <= 40 ms of CPU per photo (CPU per file, check on minus
// check off); <= 150 ms of wall time per photo for the daemon on a quarter core; VmHWM <= 160 MB;
// every `status` answered within 100 ms; no underrun.
//   npm run build && node test/bench/face-check.mjs [COUNT]     env VARIANTS=full,pi RUNS=1, BENCH_NODE_ARGS (node flags for the daemon: lib/daemon-run.mjs)
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { benchWorkDir } from './lib/bench-fs.mjs';
import { createPiBudget, procCpuSplitMs, procPeakRssMb, spawnDaemon, spawnNode, writeDaemonConfig, ROOT } from './lib/daemon-run.mjs';

const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { configSchema } = await import(join(ROOT, 'dist/config/schema.js'));
const { controlClient } = await import(join(ROOT, 'dist/control/control-client.js'));

const COUNT = Number(process.argv[2] ?? 200);
const RUNS = Number(process.env.RUNS ?? 1);
const VARIANTS = (process.env.VARIANTS ?? 'full,pi').split(',');
const PLAIN = join(ROOT, 'test/bench/lib/plain-loops.mjs');
const FACES = join(ROOT, 'test/fixtures/faces');
const SINK = join(ROOT, 'test/bench/lib/audio-sink.mjs');
/** The emulator's tone voice: 16 kHz mono, 16 bit; 60 ms per character, so 167 characters make 10 s. */
const SPEECH_BYTES_PER_SEC = 32_000;
const PHRASE = (i) => `phrase ${String(i).padStart(3, '0')} `.padEnd(167, 'x');

const workDir = benchWorkDir('ta-bench-facecheck-');
if (!workDir) process.exit(0);
const source = join(workDir.dir, 'source');
await mkdir(source);
const names = Array.from({ length: COUNT }, (_, i) => `person-${String(i).padStart(4, '0')}`);
// Real photos, each different, framed as a camera frames a head-and-shoulders shot: a portrait
// cropped to 4:3 from its top (where the head is) at a zoom of 1.0 to 1.3, shifted sideways,
// scaled to 1280 x 960, at its own brightness.
const portraits = ['ok-astronaut.jpg', 'ok-hopper.jpg'];
let bytesTotal = 0;
for (const [i, n] of names.entries()) {
  const file = join(FACES, portraits[i % 2]);
  const m = await sharp(file).metadata();
  const zoom = 1 + ((i * 37) % 10) / 30;
  const w = Math.round(m.width / zoom);
  const h = Math.min(m.height, Math.round((w * 3) / 4));
  const left = Math.round(((m.width - w) * (25 + ((i * 29) % 50))) / 100);
  const top = Math.round(((m.height - h) * ((i * 17) % 15)) / 100);
  const jpg = await sharp(file).extract({ left, top, width: w, height: h }).resize(1280, 960, { fit: 'fill' })
    .modulate({ brightness: 0.85 + ((i * 53) % 30) / 100 }).jpeg({ quality: 85 }).toBuffer();
  bytesTotal += jpg.length;
  await writeFile(join(source, `${n}.jpg`), jpg);
}

function runPlainLoop(service, budget) {
  return new Promise((resolve, reject) => {
    const child = spawnNode([PLAIN, 'post'], { env: { ...process.env, BENCH_ARGS: JSON.stringify({ service, dir: source, names, concurrency: 4 }) }, stdio: ['ignore', 'pipe', 'inherit'] }, budget);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`plain loop exited ${code}`))));
  });
}

async function count(dir, suffix) {
  return (await readdir(dir).catch(() => [])).filter((f) => f.endsWith(suffix)).length;
}

/** The cgroup's throttling counters (cgroup v1 or v2 cpu.stat) of a Pi budget: {periods, throttled, throttledMs}. */
function throttling(budget) {
  if (!budget) return undefined;
  const stat = readFileSync(join(budget.dir, 'cpu.stat'), 'utf8');
  const num = (key) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0);
  return { periods: num('nr_periods'), throttled: num('nr_throttled'), throttledMs: num('throttled_time') / 1e6 || num('throttled_usec') / 1e3 };
}

/**
 * The sound card (lib/audio-sink.mjs) behind ALSA PCM `benchsink` in `dir`: the environment the
 * daemon needs to find it, its phrases as they end, and stop().
 */
async function startSink(dir) {
  const fifo = join(dir, 'speaker.fifo');
  const made = spawnSync('mkfifo', [fifo]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
  const conf = join(dir, 'asound.conf');
  await writeFile(conf, `pcm.!default { type null }\npcm.benchsink { type file; slave.pcm null; file "${fifo}"; format "raw" }\n`);
  const child = spawn(process.execPath, [SINK, fifo, String(SPEECH_BYTES_PER_SEC)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const phrases = [];
  const waiting = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    phrases.push(JSON.parse(line));
    waiting.shift()?.();
  });
  // The sink holds the FIFO open before the player opens it (a writer's open waits for a reader).
  for (let i = 0; i < 100 && !child.exitCode; i++) await sleep(20);
  return {
    env: { ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${conf}` },
    phrases,
    /** Resolves when the sink has played the next phrase to its end. */
    nextPhrase: () => new Promise((resolve) => waiting.push(resolve)),
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'close');
    },
  };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/** One daemon, one burst: {ms, cpuMs, peakMb, status: {max, p50, p90, count}, speech, throttle, done, failed}. */
async function burst(mode, budget) {
  const dir = join(workDir.dir, `run-${mode}-${budget ? 'pi' : 'full'}-${Date.now()}`);
  await mkdir(dir);
  const terminals = [{ terminal_secret: `ts_bench_${Date.now()}_aaaaaaaaaaaaaaaa`, group_id: 'bench-facecheck' }];
  const emulator = await startEmulator({ port: 0, terminals, tts: 'tone' });
  const sink = await startSink(dir);
  let daemon;
  try {
    const config = writeDaemonConfig(dir, emulator, terminals[0], 'audio:\n  output_device: benchsink\n', 'warn', mode);
    daemon = spawnDaemon(dir, config, { budget, env: sink.env });
    await daemon.ready;
    await sleep(1500);
    const inbox = join(dir, 'enroll', 'faces');
    const control = controlClient(join(dir, 'ctl.sock'), { timeoutMs: 60_000 });
    let t0 = performance.now();
    const statusMs = [];
    let slowestAt = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t = performance.now();
        await control.status();
        const took = performance.now() - t;
        if (took > Math.max(0, ...statusMs)) slowestAt = t - t0;
        statusMs.push(took);
        await sleep(250);
      }
    })();
    // Phrases one after the other, from the start of the burst to its end (the last one is played
    // to its end): each waits for the previous one to leave the speaker, so that the silence
    // between two phrases is not taken for a gap in one.
    const speaking = (async () => {
      for (let i = 0; probing; i++) {
        const played = sink.nextPhrase();
        await control.say({ text: PHRASE(i) });
        await played;
      }
    })();
    const throttle0 = throttling(budget);
    const cpu0 = procCpuSplitMs(daemon.pid);
    t0 = performance.now();
    for (const n of names) await copyFile(join(source, `${n}.jpg`), join(inbox, `${n}.jpg`));
    let done = 0;
    let failed = 0;
    for (;;) {
      done = await count(join(dir, 'enroll', 'done', 'faces'), '.json');
      failed = await count(join(dir, 'enroll', 'failed', 'faces'), '.json');
      if (done + failed >= COUNT) break;
      if (performance.now() - t0 > 900_000) throw new Error(`the burst did not finish in 15 minutes (${done} done, ${failed} failed)`);
      await sleep(50);
    }
    const ms = performance.now() - t0;
    const cpu1 = procCpuSplitMs(daemon.pid);
    const throttle1 = throttling(budget);
    probing = false;
    await probe;
    const peakMb = procPeakRssMb(daemon.pid);
    await speaking;
    const failedDir = join(dir, 'enroll', 'failed', 'faces');
    const reasons = await Promise.all((await readdir(failedDir).catch(() => [])).filter((f) => f.endsWith('.json')).map(async (f) => `${f}: ${JSON.parse(await readFile(join(failedDir, f), 'utf8')).error}`));
    const sorted = statusMs.sort((x, y) => x - y);
    const speech = sink.phrases.reduce((acc, p) => ({ phrases: acc.phrases + 1, audioS: acc.audioS + p.bytes / SPEECH_BYTES_PER_SEC, underruns: acc.underruns + p.underruns, gapMs: acc.gapMs + p.gap_ms, at: [...acc.at, ...p.at_ms.map((ms) => `${(ms / 1000).toFixed(2)} s into phrase ${acc.phrases + 1}`)] }), { phrases: 0, audioS: 0, underruns: 0, gapMs: 0, at: [] });
    return {
      reasons, ms, cpuMs: cpu1.user + cpu1.sys - cpu0.user - cpu0.sys, peakMb, done, failed, speech,
      status: { max: sorted.at(-1), at: slowestAt, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), count: sorted.length },
      throttle: throttle0 && { periods: throttle1.periods - throttle0.periods, throttled: throttle1.throttled - throttle0.throttled, ms: throttle1.throttledMs - throttle0.throttledMs },
    };
  } finally {
    await daemon?.stop();
    await sink.stop();
    await emulator.close();
  }
}

const statusText = (r) => `status: ${r.status.count} calls, median ${r.status.p50.toFixed(1)} ms, p90 ${r.status.p90.toFixed(1)} ms, slowest ${r.status.max.toFixed(1)} ms (${(r.status.at / 1000).toFixed(1)} s into the burst)`;
const speechText = (r) => `speech: ${r.speech.phrases} phrase(s), ${r.speech.audioS.toFixed(1)} s, ${r.speech.underruns} underrun(s)${r.speech.underruns ? ` (${r.speech.gapMs} ms of silence; ${r.speech.at.join(', ')})` : ''}`;
const throttleText = (r) => (r.throttle ? `; the cgroup throttled in ${r.throttle.throttled} of ${r.throttle.periods} periods, ${(r.throttle.ms / 1000).toFixed(1)} s in all` : '');

console.log(`face check benchmark: ${COUNT} photos of 1280 x 960 (${(bytesTotal / COUNT / 1024).toFixed(0)} KB on average) copied at once into enroll/faces/; ${RUNS} run(s) per variant; this machine is shared, figures are noisy`);
let missed = false;
for (const variant of VARIANTS) {
  const budget = variant === 'pi' ? createPiBudget(`ta-bench-facecheck-${process.pid}`) : undefined;
  if (variant === 'pi' && !budget) {
    console.log('Pi budget: no cgroup cpu controller can be created here (needs root and a cgroup fs): skipped');
    continue;
  }
  try {
    console.log(`${variant === 'pi' ? `Pi budget (${budget.how})` : 'unconfined'}:`);
    for (let run = 1; run <= RUNS; run++) {
      const service = configSchema.parse({ service: { base_url: 'http://127.0.0.1:9', face_base_url: 'http://127.0.0.1:9/v1/api', terminal_secret: 'x' }, state_dir: '/x' }).service;
      const emulator = await startEmulator({ port: 0, terminals: [{ terminal_secret: 'ts_plain_bench_aaaaaaaaaaaaaaaaaaaa', group_id: 'plain' }], tts: 'tone' });
      let plain;
      try {
        plain = await runPlainLoop({ ...service, base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: 'ts_plain_bench_aaaaaaaaaaaaaaaaaaaa' }, budget);
      } finally {
        await emulator.close();
      }
      const off = await burst('off', budget);
      const on = await burst('refuse', budget);
      const checkCpu = (on.cpuMs - off.cpuMs) / COUNT;
      const wallPer = on.ms / COUNT;
      const ok = {
        cpu: variant !== 'full' || checkCpu <= 40,
        wall: variant !== 'pi' || wallPer <= 150,
        mem: on.peakMb <= 160,
        status: on.status.max <= 100,
        speech: on.speech.underruns === 0 && on.speech.phrases > 0,
        all: on.done === COUNT,
      };
      if (Object.values(ok).includes(false)) missed = true;
      const mark = (good) => (good ? 'OK' : 'MISSED');
      console.log(`  run ${run}: plain loop ${(plain.ms / 1000).toFixed(2)} s\n` +
        `    check off: ${(off.ms / 1000).toFixed(2)} s, CPU ${(off.cpuMs / COUNT).toFixed(1)} ms/photo, VmHWM ${off.peakMb.toFixed(1)} MB; ${statusText(off)}; ${speechText(off)}${throttleText(off)}\n` +
        `    check on: ${(on.ms / 1000).toFixed(2)} s (${wallPer.toFixed(1)} ms/photo${variant === 'pi' ? `, target <= 150 ${mark(ok.wall)}` : ''}; / plain ${(on.ms / plain.ms).toFixed(2)}x, / off ${(on.ms / off.ms).toFixed(2)}x), ` +
        `CPU ${(on.cpuMs / COUNT).toFixed(1)} ms/photo, the check's ${checkCpu.toFixed(1)} ms/photo${variant === 'full' ? ` (target <= 40 ${mark(ok.cpu)})` : ''}, ` +
        `VmHWM ${on.peakMb.toFixed(1)} MB (target <= 160 ${mark(ok.mem)}); ${statusText(on)} (target <= 100 ${mark(ok.status)}); ${speechText(on)} (target: none ${mark(ok.speech)})${throttleText(on)}; ` +
        `${on.done} accepted, ${on.failed} refused${ok.all ? '' : ` (every photo is a good portrait: MISSED; ${on.reasons.join('; ')})`}`);
    }
  } finally {
    budget?.close();
  }
}
workDir.close?.();
if (missed) process.exitCode = 1;
