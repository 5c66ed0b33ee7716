// BENCH_SLOW_SYNC_MS=N: the daemon's flushes made N ms slower (slow-sync.c, compiled here with the
// quick start's build-essential into a temporary folder and preloaded into the daemon only), to see
// what an SD card's flush latency does to a burst: the plain loops write nothing durably.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The daemon's environment additions for BENCH_SLOW_SYNC_MS, or {} when it is unset or 0. */
export function slowSyncEnv(msText) {
  const ms = Number(msText ?? 0);
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`BENCH_SLOW_SYNC_MS=${msText}: give whole milliseconds, e.g. 20`);
  if (ms === 0) return {};
  const dir = mkdtempSync(join(tmpdir(), 'ta-slow-sync-'));
  // The benchmark's daemons are stopped before it exits; the library goes with the benchmark.
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const lib = join(dir, 'slow-sync.so');
  execFileSync('cc', ['-O2', '-shared', '-fPIC', '-o', lib, fileURLToPath(new URL('slow-sync.c', import.meta.url)), '-ldl'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { LD_PRELOAD: lib, SLOW_SYNC_MS: String(ms) };
}
