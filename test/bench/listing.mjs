#!/usr/bin/env node
// Listing benchmark: what a huge GET /faces costs the agent, against a plain loop in the same run.
//   npx tsc -p tsconfig.json && node test/bench/listing.mjs [--faces 200000] [--huge 500000]
// A small server in a child process streams a JSON array of N face records (about 100 bytes
// each). Each measurement runs in its own child process and reports time and peak RSS:
//   - baseline: undici request + body.text() + JSON.parse, no checks (what the agent did before it
//     parsed record by record and capped answers);
//   - agent: the service client's listFaces() (per-record parse, 32 MiB cap, strict UTF-8).
// Two sizes: --faces (200,000: about 20 MB, must be listed; target time and peak RSS <= 1.3x the
// baseline) and --huge (500,000: about 50 MB, must be refused at the cap with a peak RSS below the
// baseline's, which reads it all).
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

// BENCH_DIST=/path/to/other/dist measures another build's client (e.g. the code before a change).
const DIST = process.env.BENCH_DIST ?? fileURLToPath(new URL('../../dist/', import.meta.url));
const ID = (n) => n.toString(16).padStart(32, '0');

async function serve(count) {
  const srv = createServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('[');
    for (let i = 0; i < count && !res.destroyed; i++) {
      if (!res.write(`${i ? ',' : ''}{"face_id":"${ID(i + 1)}","group_id":"g","id":${i + 1},"name":"n${i}"}`)) {
        await new Promise((r) => {
          const done = () => { res.off('drain', done); res.off('close', done); r(); };
          res.on('drain', done);
          res.on('close', done);
        });
      }
    }
    if (!res.destroyed) res.end(']');
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return srv;
}

async function child({ mode, base }) {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  const t0 = performance.now();
  let outcome;
  if (mode === 'baseline') {
    const { request } = await import('undici');
    const res = await request(`${base}/v1/api/faces`);
    const list = JSON.parse(await res.body.text());
    outcome = `${list.length} records`;
  } else {
    const { createServiceClient } = await import(join(DIST, 'client/service-client.js'));
    const { silentLogger } = await import(join(DIST, 'log/logger.js'));
    const client = createServiceClient({
      config: { base_url: base, face_base_url: `${base}/v1/api`, terminal_secret: 'bench-terminal-secret-0123456789', request_timeout: 120_000, ca_file: '', allow_insecure_http: false, retries: 0, other_auth: 'none' },
      logger: silentLogger(), userAgent: 'bench',
    });
    try {
      const faces = await client.listFaces();
      outcome = `${faces.length} faces, ${faces.skipped?.length ?? 'none'} skipped`;
    } catch (err) {
      outcome = `refused: ${err.code}`;
    }
    await client.close();
  }
  const ms = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  process.send({ ms, peakMb: peak / 1024 / 1024, outcome });
}

function run(mode, base) {
  return new Promise((resolve, reject) => {
    const c = fork(fileURLToPath(import.meta.url), ['--child', mode, base], { stdio: 'inherit' });
    c.once('message', resolve);
    c.once('error', reject);
    c.once('exit', (code) => { if (code) reject(new Error(`${mode} exited ${code}`)); });
  });
}

async function measure(count) {
  const srv = await serve(count);
  const base = `http://127.0.0.1:${srv.address().port}`;
  const best = {};
  // Alternate, keep the best of two of each: the machine may be shared.
  for (const mode of ['baseline', 'agent', 'baseline', 'agent']) {
    const r = await run(mode, base);
    console.log(`  ${mode}: ${r.ms.toFixed(0)} ms, peak RSS ${r.peakMb.toFixed(0)} MB, ${r.outcome}`);
    const b = best[mode];
    best[mode] = b ? { ...r, ms: Math.min(b.ms, r.ms), peakMb: Math.min(b.peakMb, r.peakMb) } : r;
  }
  srv.close();
  return best;
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  await child({ mode: argv[1], base: argv[2] });
} else {
  const { values } = parseArgs({ options: { faces: { type: 'string', default: '200000' }, huge: { type: 'string', default: '500000' } } });
  let failed = 0;
  const verdict = (ok) => { if (!ok) failed++; return ok ? 'OK' : 'MISSED'; };

  console.log(`listing of ${values.faces} faces:`);
  const a = await measure(Number(values.faces));
  const timeRatio = a.agent.ms / a.baseline.ms;
  const memRatio = a.agent.peakMb / a.baseline.peakMb;
  console.log(`  listed: ${a.agent.outcome} ${verdict(/^\d+ faces/.test(a.agent.outcome))}; time ${timeRatio.toFixed(2)}x the baseline (target <= 1.3x) ${verdict(timeRatio <= 1.3)}; peak RSS ${memRatio.toFixed(2)}x (target <= 1.3x) ${verdict(memRatio <= 1.3)}`);

  console.log(`listing of ${values.huge} faces:`);
  const b = await measure(Number(values.huge));
  console.log(`  agent: ${b.agent.outcome} ${verdict(b.agent.outcome === 'refused: TA_ERR_BAD_RESPONSE')}; peak RSS ${b.agent.peakMb.toFixed(0)} MB against the baseline's ${b.baseline.peakMb.toFixed(0)} MB (target below) ${verdict(b.agent.peakMb < b.baseline.peakMb)}`);
  process.exit(failed > 0 ? 1 : 0);
}
