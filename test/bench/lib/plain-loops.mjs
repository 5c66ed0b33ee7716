// The baselines, each run as its own process (like the daemon it is compared with): a plain loop
// doing the same requests with the same concurrency through the agent's HTTP client, nothing else.
//   node plain-loops.mjs post   (env BENCH_ARGS: {service, dir, names, concurrency})
//   node plain-loops.mjs get    (env BENCH_ARGS: {service, dir, concurrency})
// Prints one JSON line: {"ms":..., "count":..., "cpuMs":..., "processCpuMs":...}: ms from the
// process's own start of work; cpuMs its utime+stime (every thread, getrusage) over that same work,
// processCpuMs the same from the process's start (node's own start and the imports included).
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createServiceClient } from '../../../dist/client/service-client.js';
import { silentLogger } from '../../../dist/log/logger.js';

const args = JSON.parse(process.env.BENCH_ARGS);
const client = createServiceClient({ config: args.service, logger: silentLogger(), userAgent: 'bench-plain-loop' });
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let count = 0;
async function pool(items, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: args.concurrency }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}
if (process.argv[2] === 'post') {
  await pool(args.names, async (n) => {
    await client.createFace({ name: n, image: { path: join(args.dir, `${n}.jpg`), contentType: 'image/jpeg' } }, { retries: 0 });
    count++;
  });
} else {
  const faces = await client.listFaces();
  await pool(faces, async (f) => {
    const res = await client.getFaceImage(f.face_id);
    await pipeline(res.body, createWriteStream(join(args.dir, `${f.face_id}.jpg`)));
    count++;
  });
}
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const all = process.cpuUsage();
await client.close();
process.stdout.write(`${JSON.stringify({ ms, count, cpuMs: (cpu.user + cpu.system) / 1000, processCpuMs: (all.user + all.system) / 1000 })}\n`);
