// TLS cipher benchmark: the CPU the agent's client spends per enrollment upload (POST /faces of a
// 30 KB image held in memory, as the daemon sends them) over HTTPS, with node's cipher order
// (AES-GCM first) against ChaCha20-Poly1305 first (src/client/tls-ciphers.ts), on this CPU as it is
// and with its AES instructions hidden from OpenSSL: the stand-in for a Raspberry Pi 4, whose
// Cortex-A72 has none. Hidden with OpenSSL's own capability mask (OPENSSL_ia32cap on x86-64,
// OPENSSL_armcap on arm64), so the same node runs OpenSSL's code for CPUs without them; a Pi 4's
// cores are slower still, so its figures are larger, the ratio the thing to read. The service is
// the emulator behind lib/tls-front.mjs (which picks by the client's order, as nginx does); each
// client runs in its own process, the variants in turn, ROUNDS times.
//   npm run build && node test/bench/tls-cipher.mjs      (ROUNDS=3, COUNT=1000)
// Prints per variant the median CPU per upload (utime + stime of the client process, every thread)
// and the cipher the front saw; then, without AES instructions, ChaCha20 first / AES-GCM first.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './lib/daemon-run.mjs';
import { startTlsFront } from './lib/tls-front.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const COUNT = Number(process.env.COUNT ?? 1000);
const CONCURRENCY = 4;
/** OpenSSL's masks that hide AES (and carry-less multiply, GCM's other helper) on this machine. */
const NO_AES = process.arch === 'x64' ? { OPENSSL_ia32cap: '~0x200000200000000' } : process.arch === 'arm64' ? { OPENSSL_armcap: '0x1' } : undefined;

if (process.argv[2] === 'client') {
  // The child: COUNT uploads through the agent's client, CPU measured over the loop only.
  const { createServiceClient } = await import(join(ROOT, 'dist/client/service-client.js'));
  const { silentLogger } = await import(join(ROOT, 'dist/log/logger.js'));
  const args = JSON.parse(process.env.BENCH_ARGS);
  const client = createServiceClient({ config: args.service, logger: silentLogger(), userAgent: 'bench-tls', cpuHasAes: args.cpuHasAes });
  // As test/bench/enroll.mjs makes them: random pixels between JPEG's markers, 30 KB.
  const images = Array.from({ length: args.count }, () => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(30 * 1024 - 6), Buffer.from([0xff, 0xd9])]));
  const upload = (i) => client.createFace({ name: `${args.prefix}-${i}`, image: { path: `${args.prefix}-${i}.jpg`, bytes: images[i], contentType: 'image/jpeg' } }, { retries: 0 });
  for (let i = 0; i < 20; i++) await client.listFaces(); // the connection and the JIT warm
  const cpu0 = process.cpuUsage();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < args.count) await upload(next++);
  }));
  const cpu = process.cpuUsage(cpu0);
  await client.close();
  process.stdout.write(`${JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
  process.exit(0);
}

const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const { configSchema } = await import(join(ROOT, 'dist/config/schema.js'));
const dir = mkdtempSync(join(tmpdir(), 'ta-bench-tls-'));
const terminal = { terminal_secret: `ts_${randomBytes(16).toString('hex')}`, group_id: 'bench-tls' };
const emulator = await startEmulator({ port: 0, terminals: [terminal] });
const front = await startTlsFront(emulator.baseUrl, dir);
if (front.error) {
  console.log(`skipped: ${front.error}`);
  await emulator.close();
  process.exit(0);
}
if (!NO_AES) console.log(`no OpenSSL mask for ${process.arch} here: the runs without AES instructions are skipped`);
const service = configSchema.parse({
  service: { base_url: front.url(emulator.baseUrl), face_base_url: front.url(emulator.faceBaseUrl), terminal_secret: terminal.terminal_secret, ca_file: front.caFile },
  state_dir: '/x',
}).service;

const variants = [
  { label: 'AES instructions, node\'s order', cpuHasAes: true, env: {} },
  { label: 'AES instructions, ChaCha20 first', cpuHasAes: false, env: {} },
  ...(NO_AES ? [
    { label: 'no AES instructions, node\'s order', cpuHasAes: true, env: NO_AES, noAes: 'aes' },
    { label: 'no AES instructions, ChaCha20 first', cpuHasAes: false, env: NO_AES, noAes: 'chacha' },
  ] : []),
];

function runClient(v, round) {
  const before = { ...front.ciphers };
  return new Promise((resolve, reject) => {
    const args = { service, cpuHasAes: v.cpuHasAes, count: COUNT, prefix: `r${round}-${v.cpuHasAes ? 'a' : 'c'}-${v.noAes ?? 'hw'}` };
    const child = spawn(process.execPath, [new URL(import.meta.url).pathname, 'client'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...v.env, BENCH_ARGS: JSON.stringify(args) }, stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`client exited ${code}`));
      const used = Object.entries(front.ciphers).filter(([name, n]) => n > (before[name] ?? 0)).map(([name]) => name);
      resolve({ perUpload: JSON.parse(out).cpuMs / COUNT, ciphers: used });
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = new Map(variants.map((v) => [v.label, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 ? [...variants].reverse() : variants) {
      const r = await runClient(v, round);
      results.get(v.label).push(r);
      console.log(`round ${round + 1}: ${v.label.padEnd(36)} ${r.perUpload.toFixed(3)} ms CPU per upload (${r.ciphers.join(', ')})`);
    }
  }
} finally {
  await front.close();
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
}
for (const v of variants) {
  const rs = results.get(v.label);
  const xs = rs.map((r) => r.perUpload);
  console.log(`${v.label.padEnd(36)} median ${median(xs).toFixed(3)} ms (${Math.min(...xs).toFixed(3)} to ${Math.max(...xs).toFixed(3)}), cipher ${[...new Set(rs.flatMap((r) => r.ciphers))].join(', ')}`);
}
if (NO_AES) {
  const m = (label) => median(results.get(label).map((r) => r.perUpload));
  const ratio = m('no AES instructions, ChaCha20 first') / m('no AES instructions, node\'s order');
  console.log(`=> without AES instructions: ChaCha20 first / node's order (AES-GCM) ${ratio.toFixed(2)}x of the client's CPU per 30 KB upload`);
}
