// HTTP client transport micro-benchmark: the client's own CPU per request, against the real
// emulator over loopback, beside a plain node:http loop doing the same requests (the floor).
//   npm run build && node test/bench/transport.mjs
//   env COUNT=1000 (requests per kind), ROUNDS=3, KINDS=get,list,post,postfile, OLD=/tmp/old (another checkout, built: its
//   client is run in turn with this one), CONCURRENCY=4, BENCH_PROF=DIR (--cpu-prof of each child)
// Each client runs in a child process of its own (the emulator stays in this one), so its CPU
// (process.cpuUsage: user + sys) and its peak RSS are the client's alone. Kinds:
//   get:  GET /faces/{id}/image of a 30 KB image, streamed and read to the end (face downloads);
//   list: GET /faces/{id}, a small buffered JSON answer (listings, status calls);
//   post: POST /faces multipart with a 30 KB image held in memory (enrollment uploads);
//   postfile: the same image given by path: the agent's client checks its head and streams it from
//         disk (what `faces add` and the plain loops of enroll.mjs do; the daemon's uploads mostly send
//         the bytes their claim read), the plain loop reads it whole and posts the buffer;
//   tls:  GET /faces over https with service.ca_file set, a new connection each time (the server
//         closes it): the cost of a TLS connection with a private CA (not in the default KINDS).
// Old, new and plain run in alternation, ROUNDS times; medians are printed (µs of CPU per request).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { randomJpeg } from './lib/images.mjs';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const COUNT = Number(process.env.COUNT ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const WARMUP = Math.min(200, COUNT);
const KINDS = (process.env.KINDS ?? 'get,list,post,postfile').split(',');

async function pool(n, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < n) await fn(next++);
  }));
}

/** The floor: node:http with a keep-alive agent, one Buffer per multipart body, no checks. */
async function plainClient(args) {
  const http = await import('node:http');
  const https = await import('node:https');
  const { readFileSync } = await import('node:fs');
  const { readFile } = await import('node:fs/promises');
  const agent = new http.Agent({ keepAlive: true });
  const base = new URL(args.service.face_base_url);
  const auth = `Bearer ${args.service.terminal_secret}`;
  const call = (method, path, body, type) => new Promise((resolve, reject) => {
    const headers = { authorization: auth, ...(body ? { 'content-type': type, 'content-length': body.length } : {}) };
    const req = http.request({ agent, host: base.hostname, port: base.port, method, path: `${base.pathname}${path}`, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => (res.statusCode < 300 ? resolve(Buffer.concat(chunks)) : reject(new Error(`HTTP ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  const plain = {
    get: (id) => call('GET', `/faces/${id}/image`),
    list: (id) => call('GET', `/faces/${id}`),
    tls: () => new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: args.tls.port, path: '/v1/api/faces', ca: readFileSync(args.tls.caFile), servername: 'localhost', headers: { authorization: auth } }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    }),
    postfile: async (name, file) => plain.post(name, await readFile(file)),
    post: (name, image) => {
      const b = `----bench${randomBytes(8).toString('hex')}`;
      const body = Buffer.concat([
        Buffer.from(`--${b}\r\ncontent-disposition: form-data; name="name"\r\n\r\n${name}\r\n--${b}\r\ncontent-disposition: form-data; name="image"; filename="${name}.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`),
        image,
        Buffer.from(`\r\n--${b}--\r\n`),
      ]);
      return call('POST', '/faces', body, `multipart/form-data; boundary=${b}`);
    },
    close: async () => agent.destroy(),
  };
  return plain;
}

async function agentClient(args) {
  const { createServiceClient } = await import(join(args.root, 'dist/client/service-client.js'));
  const { silentLogger } = await import(join(args.root, 'dist/log/logger.js'));
  const client = createServiceClient({ config: args.service, logger: silentLogger(), userAgent: 'bench-transport' });
  const tlsClient = args.tls && createServiceClient({
    config: { ...args.service, face_base_url: `https://localhost:${args.tls.port}/v1/api`, ca_file: args.tls.caFile }, logger: silentLogger(), userAgent: 'bench-transport',
  });
  return {
    // Read as the plain loop reads: 'data' events (an async iterator would add its own cost here).
    get: async (id) => {
      const res = await client.getFaceImage(id);
      return new Promise((resolve, reject) => {
        let n = 0;
        res.body.on('data', (c) => { n += c.length; });
        res.body.once('end', () => resolve(n));
        res.body.once('error', reject);
      });
    },
    list: (id) => client.getFace(id),
    tls: () => tlsClient.listFaces(),
    post: (name, image) => client.createFace({ name, image: { path: `${name}.jpg`, contentType: 'image/jpeg', bytes: image } }, { retries: 0 }),
    postfile: (name, file) => client.createFace({ name, image: { path: file, contentType: 'image/jpeg' } }, { retries: 0 }),
    close: () => Promise.all([client.close(), tlsClient?.close()]),
  };
}

async function child() {
  const args = JSON.parse(process.env.BENCH_ARGS);
  const c = args.root ? await agentClient(args) : await plainClient(args);
  const image = randomJpeg(30 * 1024);
  // postfile's image on disk (read from the page cache after the first upload, as a fresh drop is).
  const file = join(mkdtempSync(join(tmpdir(), 'ta-bench-transport-')), 'image.jpg');
  writeFileSync(file, image);
  const out = {};
  for (const kind of KINDS) {
    const name = (tag, i) => `${tag}-${args.label}-${args.round}-${i}`;
    const run = (n, tag) => pool(n, (i) => (kind === 'post' ? c.post(name(tag, i), image) : kind === 'postfile' ? c.postfile(name(tag, i), file) : c[kind](args.ids[i % args.ids.length])));
    // A TLS connection with a private CA cost ~40 ms with undici: 100 of them are plenty.
    const count = kind === 'tls' ? Math.min(100, args.count) : args.count;
    await run(kind === 'tls' ? 10 : WARMUP, 'warm');
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await run(count, 'bench');
    const cpu = process.cpuUsage(cpu0);
    out[kind] = { cpuUs: (cpu.user + cpu.system) / count, wallUs: ((performance.now() - t0) * 1000) / count };
  }
  await c.close();
  rmSync(dirname(file), { recursive: true, force: true });
  out.maxRssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

function runChild(args) {
  const prof = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`, `--cpu-prof-name=${args.label}-${args.round}.cpuprofile`] : [];
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...prof, SELF, '--child'], { env: { PATH: process.env.PATH, HOME: process.env.HOME, KINDS: KINDS.join(','), BENCH_ARGS: JSON.stringify(args) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.once('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${args.label} exited ${code}`))));
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
  const emulator = await startEmulator({ port: 0 });
  const terminal = emulator.terminals[0];
  const seeded = emulator.seedFaces(terminal.group_id, Array.from({ length: 200 }, (_, i) => ({ name: `seed-${i}`, image: randomJpeg(30 * 1024) })));
  const service = {
    base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: terminal.terminal_secret,
    request_timeout: 30_000, ca_file: '', allow_insecure_http: false, retries: 2, other_auth: 'none',
  };
  let tls;
  let tlsServer;
  const certDir = mkdtempSync(join(tmpdir(), 'ta-bench-tls-'));
  if (KINDS.includes('tls')) {
    const caFile = join(certDir, 'cert.pem');
    const keyFile = join(certDir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', caFile, '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
    const https = await import('node:https');
    tlsServer = https.createServer({ key: readFileSync(keyFile), cert: readFileSync(caFile) }, (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end('[]');
    });
    await new Promise((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
    tls = { port: tlsServer.address().port, caFile };
  }
  const variants = [['new', ROOT], ...(process.env.OLD ? [['old', process.env.OLD]] : []), ['plain', undefined]];
  const results = Object.fromEntries(variants.map(([label]) => [label, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [label, root] of round % 2 ? [...variants].reverse() : variants) {
        const r = await runChild({ label, round, root, service, tls, ids: seeded.map((f) => f.face_id), count: COUNT });
        results[label].push(r);
        console.error(`round ${round} ${label}: ${KINDS.map((k) => `${k} ${r[k].cpuUs.toFixed(0)} µs`).join(', ')}, maxRSS ${r.maxRssMb.toFixed(1)} MB`);
      }
    }
  } finally {
    await emulator.close();
    tlsServer?.close();
    rmSync(certDir, { recursive: true, force: true });
  }
  const { loadavg } = await import('node:os');
  console.log(`transport: ${COUNT} requests per kind, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log('client | GET 30 KB image (CPU µs/req) | GET small JSON | POST 30 KB multipart | the same by path | new TLS connection with ca_file + GET | max RSS MB');
  for (const [label] of variants) {
    const rs = results[label];
    const cell = (k) => `${median(rs.map((r) => r[k].cpuUs)).toFixed(0)} (${Math.min(...rs.map((r) => r[k].cpuUs)).toFixed(0)}-${Math.max(...rs.map((r) => r[k].cpuUs)).toFixed(0)})`;
    console.log(`${label} | ${['get', 'list', 'post', 'postfile', 'tls'].map((k) => (KINDS.includes(k) ? cell(k) : '-')).join(' | ')} | ${median(rs.map((r) => r.maxRssMb)).toFixed(1)}`);
  }
}

if (process.argv.includes('--child')) await child();
else await main();
