import { afterAll, beforeAll, expect } from 'vitest';
import { tmpDirManual } from './tmp.js';
import { join } from 'node:path';
import { controlRequest, daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';
import { startTestEmulator, type Emulator } from './emulator.js';
import { fuzzInBatches, fuzzSeed, malformedRequests, seededRandom, type FuzzRequest, type FuzzTarget, type RawAnswer } from './fuzz-http.js';
import type { NetConnectOpts } from 'node:net';

// A real daemon (dist/main.js run) against a real emulator, with the web console and the metrics
// listener on loopback ports, for the listeners' fuzz tests: what they send goes over a real
// socket, and after each batch the daemon must still answer GET /status as the same process.

export interface FuzzDaemon {
  emulator: Emulator;
  files: DaemonFiles;
  daemon: DaemonProcess;
  consolePort: number;
  metricsPort: number;
  stop(): Promise<void>;
}

export async function startFuzzDaemon(dir: string): Promise<FuzzDaemon> {
  const emulator = await startTestEmulator();
  const files = daemonFiles(join(dir, 'agent'), emulator, {
    syncInterval: '1h',
    extra: ['console:', '  listen: 127.0.0.1:0', 'metrics:', '  listen: 127.0.0.1:0'].join('\n'),
  });
  const daemon = spawnDaemon(files.configPath);
  await daemon.waitLog(isReady, 30_000, 'the ready line');
  const consoleUrl = String((await daemon.waitLog((l) => l.msg === 'web console listening')).url);
  const metricsPort = Number((await daemon.waitLog((l) => l.msg === 'metrics listening for Prometheus')).port);
  return {
    emulator, files, daemon, consolePort: Number(new URL(consoleUrl).port), metricsPort,
    async stop() {
      daemon.signal('SIGTERM');
      await daemon.exited;
      await emulator.close();
    },
  };
}

/** A fuzz daemon for the test file: started before its tests, stopped after; `get()` it in a test. */
export function useFuzzDaemon(prefix: string): { get(): FuzzDaemon } {
  let tmp: { dir: string; remove(): void } | undefined;
  let d: FuzzDaemon | undefined;
  beforeAll(async () => {
    tmp = tmpDirManual(prefix);
    d = await startFuzzDaemon(tmp.dir);
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
    tmp?.remove();
  });
  return { get: () => d! };
}

/** GET /status on the control socket answers, from the process the test started. */
export async function expectSameDaemon(d: FuzzDaemon, after: string): Promise<void> {
  expect(d.daemon.child.exitCode, `the daemon exited after ${after}\n${d.daemon.stdout().slice(-3000)}\n${d.daemon.stderr().slice(-2000)}`).toBeNull();
  const res = await controlRequest(d.files.socketPath, 'GET', '/status');
  expect(res.status, `GET /status after ${after}`).toBe(200);
  expect((res.json() as { pid: number }).pid, `the daemon's pid after ${after}`).toBe(d.daemon.pid);
}

export interface FuzzRun {
  seed: number;
  answers: Array<{ req: FuzzRequest; answer: RawAnswer }>;
}

/**
 * `count` malformed requests to `where`, in batches; after each, the daemon is the same and
 * `alive` (a well-formed request to the listener under test) still answers.
 */
export async function fuzzListener(d: FuzzDaemon, name: string, where: NetConnectOpts, target: FuzzTarget, alive: () => Promise<void>, opts: { count?: number; batchSize?: number; waitMs?: number } = {}): Promise<FuzzRun> {
  const { count = 500, batchSize = 50, waitMs = 400 } = opts;
  const seed = fuzzSeed();
  // Printed, so a failure names the seed that replays it (FUZZ_SEED=<seed>).
  console.log(`${name} fuzz: seed ${seed} (replay with FUZZ_SEED=${seed})`);
  const requests = malformedRequests(seededRandom(seed), count, target);
  let batch = 0;
  const answers = await fuzzInBatches(where, requests, batchSize, waitMs, async (done) => {
    batch += 1;
    const what = `batch ${batch} of ${name} (seed ${seed}; kinds ${[...new Set(done.map((a) => a.req.kind))].join(', ')})`;
    await expectSameDaemon(d, what);
    await alive();
  });
  return { seed, answers };
}

/** What every listener's fuzz test asserts of the answers and the log, beyond the daemon living on. */
export function expectAnsweredCleanly(d: FuzzDaemon, run: FuzzRun): void {
  const statuses = run.answers.map((a) => a.answer.status);
  // Most requests are answered, each with an HTTP status (some wait for a body that never comes,
  // or are cut by the client, and get none before the test hangs up).
  expect(statuses.filter((s) => s !== undefined).length).toBeGreaterThan(run.answers.length / 2);
  // Every hostile target got a 4xx answer, not a closed connection.
  for (const a of run.answers.filter((x) => x.req.kind.startsWith('hostile target '))) {
    expect(a.answer.status, `${a.req.kind} (seed ${run.seed})`).toBeGreaterThanOrEqual(400);
    expect(a.answer.status, `${a.req.kind} (seed ${run.seed})`).toBeLessThan(500);
  }
  const out = d.daemon.stdout() + d.daemon.stderr();
  expect(out).not.toContain(d.emulator.terminals[0]!.terminal_secret);
  expect(out).not.toContain(d.emulator.apiKey);
  expect(d.daemon.logs().filter((l) => l.level === 'fatal')).toEqual([]);
  // A failure is logged once: no more error lines than answers that were 500.
  const errors = d.daemon.logs().filter((l) => l.level === 'error');
  expect(errors.length, JSON.stringify(errors.slice(0, 3)).slice(0, 2000)).toBeLessThanOrEqual(statuses.filter((s) => s !== undefined && s >= 500).length);
}
