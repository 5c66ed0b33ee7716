// The baselines, each run as its own process (like the daemon it is compared with): a plain loop
// doing the same requests with the same concurrency through the agent's HTTP client, nothing else.
// Beside it the same loop on node:http / node:https alone (a keep-alive Agent, maxSockets = the
// concurrency): the agent's client is itself tuned, so a baseline on it moves with it, and a ratio
// against that one alone cannot tell the daemon's gains from the client's; this one never moves.
//   node plain-loops.mjs post        (env BENCH_ARGS: {service, dir, names, concurrency})
//   node plain-loops.mjs get         (env BENCH_ARGS: {service, dir, concurrency})
//   node plain-loops.mjs post-node   the same POSTs on node:http(s) alone
//   node plain-loops.mjs get-node    the same list + GETs on node:http(s) alone
// Prints one JSON line: {"ms":..., "count":..., "cpuMs":..., "processCpuMs":...}: ms from the
// process's own start of work; cpuMs its utime+stime (every thread, getrusage) over that same work,
// processCpuMs the same from the process's start (node's own start and the imports included).
// A failed request (a status other than 2xx, a non-zero return_code) ends the process non-zero.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const args = JSON.parse(process.env.BENCH_ARGS);
const mode = process.argv[2];
if (!['post', 'get', 'post-node', 'get-node'].includes(mode)) throw new Error(`plain-loops.mjs: unknown mode ${mode}`);
const onNode = mode.endsWith('-node');

// Each mode loads only what it uses: the node:http loop's whole-process CPU (processCpuMs) must not
// include loading the agent's modules (nor node:https on a plain-HTTP run).
let client;
let node;
if (onNode) {
  node = await nodeHttpClient(args.service, args.concurrency);
} else {
  const { createServiceClient } = await import('../../../dist/client/service-client.js');
  const { silentLogger } = await import('../../../dist/log/logger.js');
  client = createServiceClient({ config: args.service, logger: silentLogger(), userAgent: 'bench-plain-loop' });
}
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let count = 0;
async function pool(items, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: args.concurrency }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}
if (mode === 'post') {
  await pool(args.names, async (n) => {
    await client.createFace({ name: n, image: { path: join(args.dir, `${n}.jpg`), contentType: 'image/jpeg' } }, { retries: 0 });
    count++;
  });
} else if (mode === 'get') {
  const faces = await client.listFaces();
  await pool(faces, async (f) => {
    const res = await client.getFaceImage(f.face_id);
    await pipeline(res.body, createWriteStream(join(args.dir, `${f.face_id}.jpg`)));
    count++;
  });
} else if (mode === 'post-node') {
  await pool(args.names, async (n) => {
    // Read per upload, as the agent reads the file by its path for each attempt.
    const image = await readFile(join(args.dir, `${n}.jpg`));
    const boundary = `----bench-node-loop-${randomUUID()}`;
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${n}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${n}.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`, 'utf8'),
      image,
      Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8'),
    ]);
    const res = await node.send('POST', '/faces', { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(body.length) }, body);
    const json = await node.json(res, `POST /faces (${n})`);
    if (json?.return_code !== 0) throw new Error(`POST /faces (${n}): return_code ${json?.return_code} (${JSON.stringify(json).slice(0, 200)})`);
    count++;
  });
} else {
  const faces = await node.json(await node.send('GET', '/faces', { accept: 'application/json' }), 'GET /faces');
  if (!Array.isArray(faces)) throw new Error(`GET /faces: not a JSON array (${JSON.stringify(faces).slice(0, 200)})`);
  await pool(faces, async (f) => {
    const what = `GET /faces/${f.face_id}/image`;
    const res = await node.send('GET', `/faces/${encodeURIComponent(f.face_id)}/image`, { accept: 'image/*' });
    if (res.statusCode < 200 || res.statusCode > 299) await node.json(res, what);
    await pipeline(res, createWriteStream(join(args.dir, `${f.face_id}.jpg`)));
    count++;
  });
}
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const all = process.cpuUsage();
await (onNode ? node.close() : client.close());
process.stdout.write(`${JSON.stringify({ ms, count, cpuMs: (cpu.user + cpu.system) / 1000, processCpuMs: (all.user + all.system) / 1000 })}\n`);

/**
 * The node:http baseline's few calls on {face_base_url}, Bearer terminal_secret: the base parsed
 * once, node:https for an https URL (it trusts NODE_EXTRA_CA_CERTS, which the benchmarks pass over
 * BENCH_TLS=1), one keep-alive Agent holding as many connections as the loop runs requests.
 */
async function nodeHttpClient(service, concurrency) {
  const base = new URL(service.face_base_url);
  const lib = await import(base.protocol === 'https:' ? 'node:https' : 'node:http');
  const agent = new lib.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = { hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'), port: base.port || undefined, agent, timeout: service.request_timeout };
  const prefix = base.pathname.replace(/\/+$/, '');
  const auth = { authorization: `Bearer ${service.terminal_secret}`, 'user-agent': 'bench-node-loop' };
  return {
    /** Resolves with the response once its headers are in; the caller reads or pipes its body. */
    send: (method, path, headers, body) => new Promise((resolve, reject) => {
      const req = lib.request({ ...target, method, path: `${prefix}${path}`, headers: { ...auth, ...headers } }, resolve);
      req.once('error', reject);
      // Without it a service that stops answering would hang the benchmark instead of failing it.
      req.once('timeout', () => req.destroy(new Error(`${method} ${path}: no answer for ${service.request_timeout} ms`)));
      req.end(body);
    }),
    /** The whole body as JSON; throws on a status other than 2xx (with the body's start). */
    async json(res, what) {
      const chunks = [];
      for await (const c of res) chunks.push(c);
      const text = Buffer.concat(chunks).toString('utf8');
      if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`${what}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
      return JSON.parse(text);
    },
    close: async () => agent.destroy(),
  };
}
