#!/usr/bin/env node
// How soon a face image replaced on the service reaches the cache, and what the re-checks cost.
//   npm run build && node test/bench/face-freshness.mjs [--faces 20,500,10000] [--size 20000] [--validators both|on|off]
// For each group size, with a service that answers conditional requests (ETag, 304) and one that
// does not (the emulator's validators setting): the agent's face sync (dist/, in this process, real
// HTTP over loopback, a real agent.db and cache folder) syncs the group, runs one timed pass, then
// the emulator's set_image replaces the image of a face that pass has just checked (the worst
// case: it is the last of the round to come up again). Timed passes follow, one sync_interval
// (default 5 min) apart on the sync's own clock plus each pass's real duration, until the cached
// file is the service's image. Printed per case: that time (simulated), the passes it took, and
// what the re-checks cost per hour (image requests, bytes received, from the emulator's log).
// Targets, at default settings: with validators, 500 faces within one sync_interval, 10,000
// within one hour, re-checks within faces.recheck_requests_per_minute (200); without,
// within faces.recheck_bytes_per_hour (64 MB). Each figure is printed beside its target as a ratio.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomJpeg } from './lib/images.mjs';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));
const SECRET = 'bench-terminal-secret-0123456789';
const GROUP = 'bench-group';
const SYNC_INTERVAL = 5 * 60_000;
const HOUR = 3_600_000;
const REQUESTS_PER_MINUTE = 200;
const BYTES_PER_HOUR = 64 * 1024 * 1024;

const { values } = parseArgs({ options: { faces: { type: 'string', default: '20,500,10000' }, size: { type: 'string', default: '20000' }, validators: { type: 'string', default: 'both' } } });
const sizes = values.faces.split(',').map(Number);
const imageBytes = Number(values.size);
const modes = values.validators === 'both' ? [true, false] : [values.validators === 'on'];

const { startEmulator } = await import(join(DIST, 'emulator/index.js'));
const { createServiceClient } = await import(join(DIST, 'client/service-client.js'));
const { silentLogger } = await import(join(DIST, 'log/logger.js'));
const { openDatabase } = await import(join(DIST, 'db/database.js'));
const { createFaceSync } = await import(join(DIST, 'faces/face-sync.js'));

async function runCase(faces, validators) {
  const emu = await startEmulator({ terminals: [{ terminal_secret: SECRET, group_id: GROUP }], validators });
  const work = mkdtempSync(join(tmpdir(), 'ta-fresh-'));
  const client = createServiceClient({
    config: { base_url: emu.baseUrl, face_base_url: emu.faceBaseUrl, terminal_secret: SECRET, request_timeout: 30_000, ca_file: '', allow_insecure_http: false, retries: 4, other_auth: 'none' },
    logger: silentLogger(), userAgent: 'bench-freshness',
  });
  const db = openDatabase({ path: join(work, 'agent.db') });
  let clock = Date.now();
  const sync = createFaceSync({
    config: { state_dir: work, faces: { sync_interval: SYNC_INTERVAL, image_recheck_interval: 6 * HOUR, download_concurrency: 8, recheck_requests_per_minute: REQUESTS_PER_MINUTE, recheck_bytes_per_hour: BYTES_PER_HOUR } },
    db, client, logger: silentLogger(), now: () => clock,
  });
  try {
    // Seeded with imageBytes-sized images (seedMembers' are 2 KB): 500 a transaction.
    for (let i = 0; i < faces; i += 500) emu.seedFaces(GROUP, Array.from({ length: Math.min(500, faces - i) }, (_, j) => ({ name: `member-${i + j}`, image: randomJpeg(imageBytes) })));
    const first = await sync.syncNow('start');
    if (!first.ok || first.added !== faces) throw new Error(`first sync: ${JSON.stringify(first)}`);
    const imageRequests = () => emu.requests.filter((r) => r.path.endsWith('/image'));
    /** One timed pass: the clock moves by the wait and by the pass's own duration. */
    const pass = async () => {
      clock += SYNC_INTERVAL;
      const t0 = performance.now();
      const r = await sync.syncNow('interval');
      clock += Math.round(performance.now() - t0);
      if (!r.ok) throw new Error(`pass failed: ${JSON.stringify(r.error)}`);
    };
    emu.clearRequests();
    await pass();
    const justChecked = imageRequests().at(-1)?.path.split('/').at(-2);
    if (!justChecked) throw new Error('the first timed pass re-checked nothing');
    const replacement = randomJpeg(imageBytes + 1);
    emu.setImage(justChecked, replacement);
    const changedAt = clock;
    emu.clearRequests();
    const matches = () => {
      const entry = sync.cachedFace(justChecked);
      return !!entry && readFileSync(join(work, 'faces', entry.image)).equals(replacement);
    };
    let passes = 0;
    const wallStart = performance.now();
    while (!matches()) {
      await pass();
      passes++;
      if (passes > 500) throw new Error('the replaced image never reached the cache');
    }
    const wallMs = performance.now() - wallStart;
    const freshMs = clock - changedAt;
    const reqs = imageRequests();
    const hours = freshMs / HOUR;
    const st = sync.status().rechecks;
    return {
      faces, validators, passes, freshMs, wallMs, mode: st.mode, roundS: st.round_s,
      requestsPerHour: reqs.length / hours, bytesPerHour: reqs.reduce((n, r) => n + r.bytesOut, 0) / hours,
      notModified: reqs.filter((r) => r.status === 304).length, full: reqs.filter((r) => r.status === 200).length,
    };
  } finally {
    await sync.stop();
    db.close();
    await client.close();
    await emu.close();
    rmSync(work, { recursive: true, force: true });
  }
}

const min = (ms) => `${(ms / 60_000).toFixed(1)} min`;
const mb = (b) => `${(b / 1048576).toFixed(1)} MB`;
let failed = false;
console.log(`face freshness: sync_interval 5 min, budgets ${REQUESTS_PER_MINUTE} requests/min and ${mb(BYTES_PER_HOUR)}/h, images ~${imageBytes} bytes`);
for (const validators of modes) {
  for (const faces of sizes) {
    const r = await runCase(faces, validators);
    // The targets: with validators, one sync_interval (and its pass) up to 500 faces, an hour beyond;
    // without, the round the byte budget allows (status's round_s) and a pass.
    const target = validators ? (faces <= 500 ? SYNC_INTERVAL : HOUR) : Math.max(SYNC_INTERVAL, (r.roundS ?? 0) * 1000) + SYNC_INTERVAL;
    const perMinute = r.requestsPerHour / 60;
    const costOk = validators ? perMinute <= REQUESTS_PER_MINUTE * 1.001 : r.bytesPerHour <= BYTES_PER_HOUR * 1.05;
    const ok = r.freshMs <= target * 1.02 && costOk;
    if (!ok) failed = true;
    console.log(`${String(faces).padStart(6)} faces, ${validators ? 'validators   ' : 'no validators'}: replaced image cached after ${min(r.freshMs)} (${r.passes} passes; target ${min(target)}, ratio ${(r.freshMs / target).toFixed(2)}) ${ok ? 'OK' : 'MISSED'}`
      + `; mode ${r.mode}, round ${min((r.roundS ?? 0) * 1000)}; re-checks ${r.requestsPerHour.toFixed(0)} requests/h (${perMinute.toFixed(0)}/min, ratio ${(perMinute / REQUESTS_PER_MINUTE).toFixed(2)} to the budget), ${mb(r.bytesPerHour)}/h (ratio ${(r.bytesPerHour / BYTES_PER_HOUR).toFixed(2)}); ${r.notModified} x 304, ${r.full} x 200; ${(r.wallMs / 1000).toFixed(1)} s of wall time`);
  }
}
if (failed) process.exitCode = 1;
