import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { onTestFinished } from 'vitest';
import { Registry } from 'prom-client';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { createServiceClient } from '../../src/client/service-client.js';
import type { ServiceClient } from '../../src/client/types.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { createLogger } from '../../src/log/logger.js';
import { createFaceSync } from '../../src/faces/face-sync.js';
import type { FaceSync, FaceSyncDeps, IndexEntry } from '../../src/faces/types.js';
import type { FaceRow } from '../../src/faces/face-store.js';
import { makeTestConfig, TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { tmpDir } from '../helpers/tmp.js';

// Real pieces for face sync tests: the emulator over loopback, the real client, a real agent.db in
// a temp state_dir, and a logger whose JSON lines the test can read.

export const OTHER_SECRET = 'other-terminal-secret-9876543210';
export const GROUP = 'group-a';
export const OTHER_GROUP = 'group-b';

/** Bytes that both sniffers take for a whole JPEG: SOI marker, filler, EOI marker. */
export function jpeg(size = 2048): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(Math.max(0, size - 6)), Buffer.from([0xff, 0xd9])]);
}

export function png(size = 2048): Buffer {
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const iend = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);
  return Buffer.concat([sig, randomBytes(Math.max(0, size - 20)), iend]);
}

export const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A row of the faces table, for tests that write the store itself: a served face, with `fields` over the defaults. */
export function faceRow(face_id: string, fields: Partial<FaceRow> = {}): FaceRow {
  return {
    face_id, group_id: 'g', id: 1, name: 'ada', image_file: `${face_id}.jpg`, image_sha256: 'a'.repeat(64),
    image_etag: null, image_last_modified: null, image_bytes: 2048, image_checked_at: 1, image_recheck_at: null,
    error: null, error_code: null, updated_at: 1, ...fields,
  };
}

export async function testEmulator(): Promise<Emulator> {
  return startTestEmulator({
    terminals: [{ terminal_secret: TEST_TERMINAL_SECRET, group_id: GROUP }, { terminal_secret: OTHER_SECRET, group_id: OTHER_GROUP }],
    tts: 'tone',
  });
}

export interface LogCapture {
  lines: Array<Record<string, unknown>>;
}

export interface Harness {
  emu: Emulator;
  stateDir: string;
  facesDir: string;
  db: Db;
  client: ServiceClient;
  registry: Registry;
  log: LogCapture;
  clock: { now: number };
  make(overrides?: Partial<FaceSyncDeps>): FaceSync;
  /** A client as the given terminal (an operator changing the group from elsewhere). */
  clientFor(secret: string): ServiceClient;
}

export async function harness(opts: { emu?: Emulator; stateDir?: string; secret?: string; concurrency?: number; faces?: Partial<FaceSyncDeps['config']['faces']> } = {}): Promise<Harness> {
  const emu = opts.emu ?? await testEmulator();
  const stateDir = opts.stateDir ?? tmpDir('ta-faces-');
  const config = makeTestConfig({
    state_dir: stateDir,
    service: { base_url: emu.baseUrl, face_base_url: emu.faceBaseUrl, terminal_secret: opts.secret ?? TEST_TERMINAL_SECRET, retries: 1 },
    faces: { sync_interval: 60_000, image_recheck_interval: 3_600_000, download_concurrency: opts.concurrency ?? 4, ...opts.faces },
  });
  const log: LogCapture = { lines: [] };
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n')) if (l) log.lines.push(JSON.parse(l)); cb(); } });
  const logger = createLogger({ level: 'debug', destination: sink });
  const clientFor = (secret: string) => {
    const c = createServiceClient({ config: { ...config.service, terminal_secret: secret }, logger, userAgent: 'test', backoff: { initialMs: 5, maxMs: 10 } });
    onTestFinished(() => c.close());
    return c;
  };
  const client = clientFor(opts.secret ?? TEST_TERMINAL_SECRET);
  const db = openDatabase({ path: join(stateDir, 'agent.db') });
  const registry = new Registry();
  const clock = { now: Date.now() };
  const syncs: FaceSync[] = [];
  onTestFinished(async () => {
    for (const s of syncs) await s.stop();
    db.close();
  });
  return {
    emu, stateDir, facesDir: join(stateDir, 'faces'), db, client, registry, log, clock, clientFor,
    make(overrides = {}) {
      const s = createFaceSync({
        config, db, client, logger: logger.child({ component: 'faces' }), metrics: registry, now: () => clock.now,
        backoff: { initialMs: 20, maxMs: 50 }, deleteGraceMs: 0, ...overrides,
      });
      syncs.push(s);
      return s;
    },
  };
}

/**
 * What a face-recognition program sees: index.json and the hash of every file in faces/ (dotfiles
 * included). The hidden staging folder of kept downloads is left out: see `staged()`.
 */
export function snapshot(facesDir: string): { index: string | undefined; files: Record<string, string> } {
  const index = existsSync(join(facesDir, 'index.json')) ? readFileSync(join(facesDir, 'index.json'), 'utf8') : undefined;
  const files: Record<string, string> = {};
  for (const f of existsSync(facesDir) ? readdirSync(facesDir) : []) {
    if (f !== '.staging') files[f] = sha(readFileSync(join(facesDir, f)));
  }
  return { index, files };
}

/** Files in faces/.staging/ (downloads kept from a failed sync), name -> sha256. */
export function staged(facesDir: string): Record<string, string> {
  const dir = join(facesDir, '.staging');
  const files: Record<string, string> = {};
  for (const f of existsSync(dir) ? readdirSync(dir) : []) files[f] = sha(readFileSync(join(dir, f)));
  return files;
}

export function readIndex(facesDir: string): IndexEntry[] {
  return JSON.parse(readFileSync(join(facesDir, 'index.json'), 'utf8')) as IndexEntry[];
}

/** Every file named by index.json exists and holds the server's image. */
export function expectIndexMatchesServer(facesDir: string, emu: Emulator): IndexEntry[] {
  const entries = readIndex(facesDir);
  for (const e of entries) {
    const bytes = readFileSync(join(facesDir, e.image));
    const server = emu.state.faceImage(e.face_id);
    if (!server || !bytes.equals(server)) throw new Error(`cached image ${e.image} differs from the server's`);
  }
  return entries;
}

export function writeTemp(dir: string, name: string, bytes: Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return p;
}

export function imageRequests(emu: Emulator): number {
  return emu.requests.filter((r) => r.method === 'GET' && /\/faces\/[0-9a-f]{32}\/image$/.test(r.path)).length;
}

export function listRequests(emu: Emulator): number {
  return emu.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/v1/api/faces')).length;
}
