// syncfs helper benchmark: `npm run build && node test/bench/syncfs.mjs [calls]` (default 300).
//
// The daemon makes new face images and result files durable with syncfs(2) through one helper
// process (src/util/syncfs.ts): perl making the system call itself, or where perl is missing a
// shell running coreutils' `sync --file-system` for each call. Both helpers serve the same calls in
// the same run, in turn, each call after a 30 KB file is written into the folder (what a cache pass
// or a result batch leaves dirty). Measured per call: the helper's CPU (its own and its children's,
// reaped or running, from /proc), the calling process's CPU, and the wall time. Target (issue 11,
// r19): the perl helper's CPU per call at most a fifth of the shell's.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSyncfsRunner } from '../../dist/util/syncfs.js';
import { liveChildren, procCpuMs } from './lib/daemon-run.mjs';

const CALLS = Number(process.argv[2] ?? 300);
const ROUNDS = 2;

async function measure(label, options, dir) {
  const runner = createSyncfsRunner(options);
  const signal = new AbortController().signal;
  const before = new Set(liveChildren(process.pid));
  await runner.run(dir, signal, 30_000);
  const helper = liveChildren(process.pid).find((c) => !before.has(c));
  const exe = readFileSync(`/proc/${helper}/cmdline`, 'utf8').split('\0')[0];
  const payload = Buffer.alloc(30 * 1024, 7);
  const h0 = procCpuMs(helper);
  const me0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) {
    writeFileSync(join(dir, `f-${label}-${i}`), payload);
    await runner.run(dir, signal, 30_000);
  }
  const wall = performance.now() - t0;
  const me = process.cpuUsage(me0);
  const r = { helperMs: (procCpuMs(helper) - h0) / CALLS, callerMs: (me.user + me.system) / 1000 / CALLS, wallMs: wall / CALLS };
  runner.close();
  console.log(`  ${label.padEnd(6)} (${exe}): helper CPU ${r.helperMs.toFixed(3)} ms/call, this process ${r.callerMs.toFixed(3)} ms/call (the 30 KB write included), wall ${r.wallMs.toFixed(2)} ms/call`);
  return r;
}

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-syncfs-'));
console.log(`syncfs helper benchmark: ${CALLS} calls per helper and round, ${ROUNDS} rounds, in ${dir} (${process.arch})`);
const perl = [];
const shell = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    perl.push(await measure('perl', {}, dir));
    shell.push(await measure('shell', { perl: join(dir, 'no-perl-here') }, dir));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const sum = (rs, k) => rs.reduce((a, r) => a + r[k], 0) / rs.length;
const ratio = sum(perl, 'helperMs') / sum(shell, 'helperMs');
console.log(`=> helper CPU per call: perl ${sum(perl, 'helperMs').toFixed(3)} ms, shell + sync ${sum(shell, 'helperMs').toFixed(3)} ms: ${ratio.toFixed(2)}x ` +
  `(target <= 0.20x) ${ratio <= 0.2 ? 'OK' : 'MISSED'}; wall per call ${sum(perl, 'wallMs').toFixed(2)} against ${sum(shell, 'wallMs').toFixed(2)} ms`);
