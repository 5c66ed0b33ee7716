import type { FaceChecker } from '../../src/facecheck/index.js';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Registry } from 'prom-client';
import { createServiceClient } from '../../src/client/service-client.js';
import type { ServiceClient } from '../../src/client/types.js';
import type { AgentConfig } from '../../src/config/schema.js';
import { encodeWav } from '../../src/audio/wav.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { createWalSyncer, type Flush } from '../../src/db/wal-sync.js';
import { createEnrollment } from '../../src/enroll/index.js';
import { createEnrollFs, type EnrollFs } from '../../src/enroll/enroll-fs.js';
import { createLayout, ensureFolders, type Layout } from '../../src/enroll/layout.js';
import type { FaceSeedImage } from '../../src/enroll/types.js';
import type { Enrollment } from '../../src/enroll/index.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { makeTestConfig, type DeepPartial } from '../helpers/config.js';
import { startTestEmulator, terminalOf, type Emulator, type EmulatorOptions } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

/** A JPEG as far as any sniffer can tell, unique per call. */
export function jpeg(seed = randomBytes(8).toString('hex')): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.from(seed), randomBytes(512), Buffer.from([0xff, 0xd9])]);
}

export function png(): Buffer {
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  return Buffer.concat([sig, Buffer.from('IHDR'), randomBytes(300)]);
}

/** 16-bit PCM samples of a tone (not silence: the bytes differ per call). */
export function pcm(seconds: number, rate = 16000, channels = 1): Buffer {
  const frames = Math.round(seconds * rate);
  const buf = Buffer.alloc(frames * channels * 2);
  const f = 200 + Math.random() * 400;
  for (let i = 0; i < frames; i++) {
    const v = Math.round(Math.sin((2 * Math.PI * f * i) / rate) * 8000);
    for (let c = 0; c < channels; c++) buf.writeInt16LE(v, (i * channels + c) * 2);
  }
  return buf;
}

export function wav(seconds = 1, rate = 16000, channels = 1): Buffer {
  return encodeWav({ sampleRate: rate, channels, bitsPerSample: 16 }, pcm(seconds, rate, channels));
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export async function put(dir: string, rel: string, data: Buffer | string): Promise<string> {
  const p = join(dir, ...rel.split('/'));
  await mkdir(dirname(p), { recursive: true });
  await writeFile(p, data);
  return p;
}

export async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

/** Files a reader of done/ or failed/ counts: without the hidden temp files of atomic writes in progress. */
export function listResults(dir: string): string[] {
  return listFiles(dir).filter((f) => !f.split('/').at(-1)!.startsWith('.'));
}

export function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name).slice(dir.length + 1)).sort();
}

export interface Rig {
  emulator: Emulator;
  config: AgentConfig;
  dir: string;
  db: Db;
  client: ServiceClient;
  enrollment: Enrollment;
  metrics: Registry;
  changed: string[];
  /** What the face cache was given to seed itself with (the listed face and the bytes sent). */
  seeds: FaceSeedImage[];
  /** Starts a new Enrollment on the same folders and database (after stop()). */
  restart(): Promise<Enrollment>;
}

export interface RigOptions {
  emulator?: EmulatorOptions;
  config?: DeepPartial<AgentConfig>;
  start?: boolean;
  /** Where the enrollment logs; silent when absent. */
  logger?: Logger;
  /** The dispatcher's wait for more faces to resolve at once (EnrollmentDeps.resolveWaitMs). */
  resolveWaitMs?: number;
  /** agent.db's WAL flush (db/wal-sync.ts Flush): a test's slower disk; fdatasync when absent. */
  flush?: Flush;
  /** The face check's worker, for a rig whose config turns the check on (test/helpers/face-checker.ts). */
  faceChecker?: FaceChecker;
}

/** A real emulator, real client, real SQLite file and real folders; all torn down after the test. */
export async function startRig(opts: RigOptions = {}): Promise<Rig> {
  const emulator = await startTestEmulator(opts.emulator);
  const t = terminalOf(emulator);
  const config = makeTestConfig({
    ...opts.config,
    service: { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: t.terminal_secret, api_key: emulator.apiKey, request_timeout: 2000, ...opts.config?.service },
    enroll: { settle_time: 150, rescan_interval: 1000, knowledge_debounce: 200, upload_concurrency: 4, ...opts.config?.enroll },
    speaker_training: { poll_interval: 50, poll_timeout: 10_000, ...opts.config?.speaker_training },
  });
  const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
  const client = createServiceClient({ config: config.service, logger: silentLogger(), userAgent: 'enroll-test' });
  const changed: string[] = [];
  const seeds: FaceSeedImage[] = [];
  let metrics = new Registry();
  // Shared by every Enrollment of the rig, as the daemon's is (closed below, after the last one).
  const walSyncer = opts.flush ? createWalSyncer(db, opts.flush) : undefined;
  const make = () => createEnrollment({
    config, db, client, logger: opts.logger ?? silentLogger(), metrics, retry: { initialMs: 50, maxMs: 400 }, ...(opts.resolveWaitMs ? { resolveWaitMs: opts.resolveWaitMs } : {}),
    ...(walSyncer ? { walSyncer } : {}), ...(opts.faceChecker ? { faceChecker: opts.faceChecker } : {}), onFaceChanged: (id, seed) => {
      changed.push(id);
      if (seed) seeds.push(seed);
    },
  });
  const rig: Rig = {
    emulator, config, dir: config.enroll.dir, db, client, enrollment: make(), metrics, changed, seeds,
    async restart() {
      await rig.enrollment.stop();
      metrics = new Registry();
      rig.metrics = metrics;
      rig.enrollment = make();
      await rig.enrollment.start();
      return rig.enrollment;
    },
  };
  onTestFinished(async () => {
    await rig.enrollment.stop();
    await walSyncer?.close();
    await client.close();
    db.close();
  });
  if (opts.start !== false) await rig.enrollment.start();
  return rig;
}

/**
 * Calls on enroll.dir made in place (`onLoop`: decided on a layout in a temp dir, all one file
 * system) or through the thread pool (undecided): enroll-fs.ts. Components that take one are
 * tested with both.
 */
export async function enrollFsFor(onLoop: boolean): Promise<EnrollFs> {
  const fs = createEnrollFs();
  if (onLoop) {
    const root = tmpDir('ta-enroll-fs-');
    const layout = await layoutIn(join(root, 'enroll'), root);
    if (!(await fs.decide(layout, layout.staging))) throw new Error(`${root}: its folders are not on one file system`);
  }
  return fs;
}

/** The layout of `enrollDir` with state_dir `stateDir`, its folders made. */
export async function layoutIn(enrollDir: string, stateDir: string): Promise<Layout> {
  const layout = createLayout(enrollDir, stateDir);
  await ensureFolders(layout);
  return layout;
}
