import { describe, expect, it, onTestFinished } from 'vitest';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIT_RETENTION, pruneVoiceprintAudits } from '../../src/voiceprint/audit-retention.js';
import { createVoiceprintRegistry, type VoiceprintRegistry } from '../../src/voiceprint/registry.js';
import { createVoiceEnroll } from '../../src/voiceprint/voice-enroll.js';
import { createServiceClient } from '../../src/client/service-client.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { silentLogger } from '../../src/log/logger.js';
import { makeTestConfig } from '../helpers/config.js';
import { tmpDir } from '../helpers/tmp.js';

// Real files in a temp state_dir and a real agent.db: what is left in state_dir/voiceprints/
// after the retention ran, and what the registry still points at.

const MIN = 60_000;
const DAY = 24 * 60 * MIN;

interface Setup {
  stateDir: string;
  dir: string;
  db: Db;
  registry: VoiceprintRegistry;
  now: number;
}

function setup(): Setup {
  const stateDir = tmpDir('ta-audit-');
  const dir = join(stateDir, 'voiceprints');
  mkdirSync(dir, { recursive: true });
  const db = openDatabase({ path: join(stateDir, 'agent.db') });
  onTestFinished(() => {
    db.close();
  });
  return { stateDir, dir, db, registry: createVoiceprintRegistry(db), now: Date.now() };
}

/** One audit as register.ts leaves it: STEM.wav and STEM.json, last written `ageMs` ago. */
function audit(s: Setup, stem: string, ageMs: number, opts: { bytes?: number; registeredAs?: string; json?: boolean } = {}): string {
  const wav = join(s.dir, `${stem}.wav`);
  const json = join(s.dir, `${stem}.json`);
  writeFileSync(wav, Buffer.alloc(opts.bytes ?? 1000, 1));
  const t = (s.now - ageMs) / 1000;
  utimesSync(wav, t, t);
  if (opts.json !== false) {
    writeFileSync(json, JSON.stringify({ ok: opts.registeredAs !== undefined }));
    utimesSync(json, t, t);
  }
  if (opts.registeredAs) {
    s.registry.add({ voiceprintId: opts.registeredAs, name: stem, source: 'enroll', info: {}, auditWav: wav, auditJson: json, at: s.now - ageMs });
  }
  return stem;
}

function stemsLeft(s: Setup): string[] {
  return [...new Set(readdirSync(s.dir).filter((f) => !f.startsWith('.')).map((f) => f.replace(/\.(wav|json)$/, '')))].sort();
}

/** No row names a file that is not there. */
function expectRegistryConsistent(s: Setup): void {
  for (const row of s.registry.list()) {
    for (const p of [row.audit_wav, row.audit_json]) if (p !== null) expect(existsSync(p), p).toBe(true);
  }
}

describe('voiceprint audit retention', () => {
  it('keeps registered audits, the newest 20 others and those in flight; deletes the oldest failed ones', async () => {
    const s = setup();
    const registered = [1, 2, 3, 4, 5].map((i) => audit(s, `reg-${i}`, (300 + i) * DAY, { registeredAs: `vp-${i}` }));
    // 30 attempts the service refused, 8 to 37 days old (older than the 7 days kept regardless).
    const failed = Array.from({ length: 30 }, (_, i) => audit(s, `failed-${String(i).padStart(2, '0')}`, (8 + i) * DAY));
    const recent = [1, 2, 3].map((i) => audit(s, `recent-${i}`, i * DAY));
    const inFlight = audit(s, 'in-flight', 5 * MIN, { json: false });
    const orphan = audit(s, 'orphan', 400 * DAY, { json: false });
    // A voiceprint deleted since: its audit is no longer a registered one.
    const deleted = audit(s, 'deleted', 200 * DAY, { registeredAs: 'vp-gone' });
    s.registry.remove('vp-gone');
    writeFileSync(join(s.dir, 'notes.txt'), 'an operator file: not an audit');
    writeFileSync(join(s.dir, '.crashed.wav.0a1b.tmp'), 'left by a crash');
    utimesSync(join(s.dir, '.crashed.wav.0a1b.tmp'), (s.now - 2 * 3600_000) / 1000, (s.now - 2 * 3600_000) / 1000);
    writeFileSync(join(s.dir, '.writing.wav.2c3d.tmp'), 'being written now');

    const report = await pruneVoiceprintAudits({ stateDir: s.stateDir, registry: s.registry, now: s.now });

    // Of the 35 unregistered and settled: the 3 recent ones and the 17 newest failed ones stay.
    const keptFailed = failed.slice(0, 17);
    expect(stemsLeft(s)).toEqual([...registered, ...keptFailed, ...recent, inFlight, 'notes.txt'].sort());
    for (const gone of [...failed.slice(17), orphan, deleted]) expect(existsSync(join(s.dir, `${gone}.wav`)), gone).toBe(false);
    expect(report).toMatchObject({ deleted: 15, deletedRegistered: 0, kept: 26, bytesFreed: 15 * 1000 + 13 * '{"ok":false}'.length + '{"ok":true}'.length });
    expect(existsSync(join(s.dir, '.crashed.wav.0a1b.tmp'))).toBe(false);
    expect(existsSync(join(s.dir, '.writing.wav.2c3d.tmp'))).toBe(true);
    expect(s.registry.list().map((r) => r.audit_wav !== null)).toEqual([true, true, true, true, true]);
    expectRegistryConsistent(s);

    // Nothing more to do on a second run.
    expect(await pruneVoiceprintAudits({ stateDir: s.stateDir, registry: s.registry, now: s.now })).toMatchObject({ deleted: 0, kept: 26 });
  });

  it('above the size cap deletes unregistered audits first, then the oldest registered ones, and unlinks their rows', async () => {
    const s = setup();
    const size = 190 * 1024;
    const reg = Array.from({ length: 12 }, (_, i) => audit(s, `reg-${String(i).padStart(2, '0')}`, (100 - i) * DAY, { bytes: size, registeredAs: `vp-${i}` }));
    const failed = [audit(s, 'failed-a', 2 * DAY, { bytes: size }), audit(s, 'failed-b', 3 * DAY, { bytes: size })];
    const inFlight = audit(s, 'in-flight', MIN, { bytes: size });
    // 15 audits of ~190 KB against a cap of 10.
    const hardCapBytes = 10 * (size + 20);

    const report = await pruneVoiceprintAudits({ stateDir: s.stateDir, registry: s.registry, now: s.now, limits: { hardCapBytes } });

    expect(report).toMatchObject({ deleted: 5, deletedRegistered: 3 });
    expect(report.bytes).toBeLessThanOrEqual(hardCapBytes);
    expect(stemsLeft(s)).toEqual([...reg.slice(3), inFlight].sort());
    for (const f of failed) expect(existsSync(join(s.dir, `${f}.wav`))).toBe(false);
    // Every voiceprint is still registered; the three oldest no longer name an audit.
    const rows = s.registry.list();
    expect(rows).toHaveLength(12);
    expect(rows.filter((r) => r.audit_wav === null && r.audit_json === null).map((r) => r.voiceprint_id)).toEqual(['vp-0', 'vp-1', 'vp-2']);
    expectRegistryConsistent(s);
  });

  it('the defaults are the documented bounds', () => {
    expect(AUDIT_RETENTION).toEqual({ keepNewest: 20, keepYoungerMs: 7 * DAY, maxUnregistered: 200, hardCapBytes: 512 * 1024 * 1024, graceMs: 15 * MIN, tempMaxAgeMs: 60 * MIN });
  });

  it('the voice component prunes at start, and stop() waits for it', async () => {
    const s = setup();
    const failed = Array.from({ length: 25 }, (_, i) => audit(s, `failed-${String(i).padStart(2, '0')}`, (10 + i) * DAY));
    const config = makeTestConfig({ state_dir: s.stateDir });
    // The client is never called: start() only tidies the audit folder.
    const client = createServiceClient({ config: config.service, logger: silentLogger(), userAgent: 'terminal-agent/test' });
    const voice = createVoiceEnroll({ config, db: s.db, client, logger: silentLogger() });
    await voice.start();
    await voice.stop();
    await client.close();
    expect(stemsLeft(s)).toEqual(failed.slice(0, 20));
  });
});
