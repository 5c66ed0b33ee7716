import type { Db } from '../db/database.js';
import { inTransaction } from '../db/database.js';

// The agent's own list of the voiceprints it registered: the API has no list call, so this table is
// the only place an operator can see what the terminal enrolled (and the id needed to delete it).

export type VoiceprintSource = 'enroll' | 'folder' | 'cli';

export interface VoiceprintRow {
  voiceprint_id: string | null;
  name: string;
  source: VoiceprintSource;
  model: string | null;
  sample_rate: number | null;
  channels: number | null;
  seconds: number | null;
  quality: Record<string, unknown> | null;
  info: Record<string, unknown>;
  audit_wav: string | null;
  audit_json: string | null;
  created_at: string;
}

export interface NewVoiceprint {
  voiceprintId: string | undefined;
  name: string;
  source: VoiceprintSource;
  info: Record<string, unknown>;
  model?: string;
  sampleRate?: number;
  channels?: number;
  seconds?: number;
  quality?: Record<string, unknown>;
  auditWav?: string;
  auditJson?: string;
  at?: number;
}

export interface VoiceprintRegistry {
  add(v: NewVoiceprint): void;
  list(): VoiceprintRow[];
  get(voiceprintId: string): VoiceprintRow | undefined;
  /** True when a row was removed. */
  remove(voiceprintId: string): boolean;
  count(): number;
  /** Rows that still name an audit file (for the audit retention). */
  auditRefs(): AuditRef[];
  /** The row no longer points at its audit files (they are about to be deleted). */
  forgetAudit(rowId: number): void;
}

export interface AuditRef {
  id: number;
  audit_wav: string | null;
  audit_json: string | null;
  created_at: number;
}

interface DbRow {
  voiceprint_id: string | null;
  name: string;
  source: string;
  model: string | null;
  sample_rate: number | null;
  channels: number | null;
  seconds: number | null;
  quality_json: string | null;
  info_json: string;
  audit_wav: string | null;
  audit_json: string | null;
  created_at: number;
}

export function createVoiceprintRegistry(db: Db): VoiceprintRegistry {
  const q = {
    // A voiceprint id the service hands out again (it re-registered the same audio) replaces the
    // old row: the registry mirrors the service, one row per id.
    insert: db.prepare(`INSERT INTO voiceprints (voiceprint_id, name, info_json, source, model, sample_rate, channels, seconds, quality_json, audit_wav, audit_json, created_at)
      VALUES (@voiceprint_id, @name, @info_json, @source, @model, @sample_rate, @channels, @seconds, @quality_json, @audit_wav, @audit_json, @created_at)
      ON CONFLICT(voiceprint_id) DO UPDATE SET name = excluded.name, info_json = excluded.info_json, source = excluded.source,
        model = excluded.model, sample_rate = excluded.sample_rate, channels = excluded.channels, seconds = excluded.seconds,
        quality_json = excluded.quality_json, audit_wav = excluded.audit_wav, audit_json = excluded.audit_json, created_at = excluded.created_at`),
    all: db.prepare('SELECT * FROM voiceprints ORDER BY created_at, id'),
    one: db.prepare('SELECT * FROM voiceprints WHERE voiceprint_id = ?'),
    remove: db.prepare('DELETE FROM voiceprints WHERE voiceprint_id = ?'),
    count: db.prepare('SELECT COUNT(*) AS n FROM voiceprints'),
    auditRefs: db.prepare('SELECT id, audit_wav, audit_json, created_at FROM voiceprints WHERE audit_wav IS NOT NULL OR audit_json IS NOT NULL'),
    forgetAudit: db.prepare('UPDATE voiceprints SET audit_wav = NULL, audit_json = NULL WHERE id = ?'),
  };

  return {
    add(v) {
      inTransaction(db, () => {
        q.insert.run({
          voiceprint_id: v.voiceprintId ?? null,
          name: v.name,
          info_json: JSON.stringify(v.info),
          source: v.source,
          model: v.model ?? null,
          sample_rate: v.sampleRate ?? null,
          channels: v.channels ?? null,
          seconds: v.seconds ?? null,
          quality_json: v.quality ? JSON.stringify(v.quality) : null,
          audit_wav: v.auditWav ?? null,
          audit_json: v.auditJson ?? null,
          created_at: v.at ?? Date.now(),
        });
      });
    },
    list: () => (q.all.all() as DbRow[]).map(toRow),
    get(id) {
      const r = q.one.get(id) as DbRow | undefined;
      return r ? toRow(r) : undefined;
    },
    remove: (id) => inTransaction(db, () => q.remove.run(id).changes > 0),
    count: () => (q.count.get() as { n: number }).n,
    auditRefs: () => q.auditRefs.all() as AuditRef[],
    forgetAudit: (rowId) => inTransaction(db, () => void q.forgetAudit.run(rowId)),
  };
}

function toRow(r: DbRow): VoiceprintRow {
  return {
    voiceprint_id: r.voiceprint_id,
    name: r.name,
    source: r.source as VoiceprintSource,
    model: r.model,
    sample_rate: r.sample_rate,
    channels: r.channels,
    seconds: r.seconds,
    quality: r.quality_json ? (JSON.parse(r.quality_json) as Record<string, unknown>) : null,
    info: JSON.parse(r.info_json) as Record<string, unknown>,
    audit_wav: r.audit_wav,
    audit_json: r.audit_json,
    created_at: new Date(r.created_at).toISOString(),
  };
}
