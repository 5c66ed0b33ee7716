import type { Db } from '../db/database.js';
import type { Kind, OutboxRow, RowMeta, RowState } from './types.js';

// Every statement on the outbox tables, prepared once. Callers group them in inTransaction().
//
// The hot statements (every file runs them several times in a burst) bind by position and read
// rows as arrays built into objects here: better-sqlite3's named parameters and object rows
// (looked up and set column by column) cost about twice as much.

/** Every column of outbox, in the order rowOf reads them. */
const ROW_COLUMNS = `id, kind, name, source_path, source_size, source_mtime_ms, staged_path, content_sha256, size, action, meta_json, state,
  attempts, next_attempt_at, started_at, last_error, last_error_code, last_status, result_json, final_path, finalized, created_at, updated_at`;

type RawRow = [
  id: number, kind: Kind, name: string, source_path: string, source_size: number, source_mtime_ms: number, staged_path: string | null,
  content_sha256: string, size: number, action: string | null, meta_json: string, state: RowState, attempts: number, next_attempt_at: number,
  started_at: number | null, last_error: string | null, last_error_code: string | null, last_status: number | null, result_json: string | null,
  final_path: string | null, finalized: number, created_at: number, updated_at: number,
];

function rowOf(r: RawRow): OutboxRow {
  return {
    id: r[0], kind: r[1], name: r[2], source_path: r[3], source_size: r[4], source_mtime_ms: r[5], staged_path: r[6], content_sha256: r[7],
    size: r[8], action: r[9], meta_json: r[10], state: r[11], attempts: r[12], next_attempt_at: r[13], started_at: r[14], last_error: r[15],
    last_error_code: r[16], last_status: r[17], result_json: r[18], final_path: r[19], finalized: r[20], created_at: r[21], updated_at: r[22],
  };
}

const rowsOf = (rows: unknown[]): OutboxRow[] => (rows as RawRow[]).map(rowOf);
const rowOrUndefined = (r: unknown): OutboxRow | undefined => (r === undefined ? undefined : rowOf(r as RawRow));

/** The columns an insert sets: an OutboxRow's identity and content, meta as an object. */
export type NewRow = Pick<OutboxRow, 'kind' | 'name' | 'source_path' | 'source_size' | 'source_mtime_ms' | 'staged_path' | 'content_sha256' | 'size' | 'state'>
  & Partial<Pick<OutboxRow, 'action' | 'last_error' | 'last_error_code' | 'last_status' | 'result_json' | 'final_path'>>
  & { meta?: RowMeta };

export interface KnowledgeMirrorRow {
  id: string;
  file: string;
  size: number;
  mtime_ms: number;
  content_sha256: string;
  uploaded: number;
}

export interface CountRow {
  kind: Kind;
  state: RowState;
  n: number;
  oldest: number | null;
}

export interface SideSummary {
  n: number;
  /** The oldest updated_at. */
  oldest: number;
  /** The earliest next_attempt_at. */
  due: number;
}

export type OutboxStore = ReturnType<typeof createOutboxStore>;

export function createOutboxStore(db: Db) {
  const s = {
    insert: db.prepare(`INSERT INTO outbox (kind, name, source_path, source_size, source_mtime_ms, staged_path, content_sha256, size, action, meta_json, state,
        last_error, last_error_code, last_status, result_json, final_path, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    get: db.prepare(`SELECT ${ROW_COLUMNS} FROM outbox WHERE id = ?`).raw(true),
    activeBySource: db.prepare('SELECT id FROM outbox WHERE source_path = ? AND finalized = 0 LIMIT 1'),
    activeSources: db.prepare('SELECT source_path FROM outbox WHERE finalized = 0').pluck(),
    doneByContent: db.prepare(`SELECT ${ROW_COLUMNS} FROM outbox WHERE kind = ? AND name = ? AND content_sha256 = ? AND state = 'done' AND result_json IS NOT NULL
      ORDER BY id DESC LIMIT 1`).raw(true),
    activeByContent: db.prepare(`SELECT id FROM outbox WHERE kind = ? AND name = ? AND content_sha256 = ? AND state NOT IN ('done', 'failed') LIMIT 1`),
    activeName: db.prepare(`SELECT id FROM outbox WHERE kind = ? AND name = ? AND state NOT IN ('done', 'failed') LIMIT 1`),
    // In id order without sorting every waiting row (the planner would pick outbox_state otherwise).
    due: db.prepare(`SELECT ${ROW_COLUMNS} FROM outbox INDEXED BY outbox_queue WHERE state = ? AND next_attempt_at <= ? AND finalized = 0 ORDER BY id LIMIT ?`).raw(true),
    // Queued rows that may start now: files for the same kind+name go one at a time, in order.
    // Their ids only: a row of every column costs about ten times a small one to build, and most
    // rows read ahead were read again before they started (dispatcher.ts).
    startable: db.prepare(`SELECT o.id FROM outbox AS o INDEXED BY outbox_queue WHERE o.state = 'queued' AND o.next_attempt_at <= ? AND o.finalized = 0
      AND NOT EXISTS (SELECT 1 FROM outbox AS p WHERE p.kind = o.kind AND p.name = o.name AND p.id < o.id AND p.state NOT IN ('done', 'failed'))
      ORDER BY o.id LIMIT ?`).pluck(),
    // By state first: the planner would otherwise walk every unfinalized row (outbox_pending).
    byState: db.prepare(`SELECT ${ROW_COLUMNS} FROM outbox INDEXED BY outbox_queue WHERE state = ? AND finalized = 0 ORDER BY id`).raw(true),
    // How many rows wait for a side step, since when, and the earliest due, without reading them
    // (checked every pass; an empty read of every column costs as much as ten small rows).
    sideSummary: db.prepare(`SELECT state, COUNT(*) AS n, MIN(updated_at) AS oldest, MIN(next_attempt_at) AS due FROM outbox INDEXED BY outbox_queue
      WHERE state IN ('resolving', 'unknown', 'training') AND finalized = 0 GROUP BY state`),
    unfinalized: db.prepare(`SELECT ${ROW_COLUMNS} FROM outbox WHERE finalized = 0 AND state IN ('done', 'failed') ORDER BY id LIMIT ?`).raw(true),
    nextDue: db.prepare(`SELECT MIN(t) AS t FROM (SELECT MIN(next_attempt_at) AS t FROM outbox WHERE state = 'queued' AND finalized = 0
      UNION ALL SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'unknown' AND finalized = 0
      UNION ALL SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'training' AND finalized = 0)`),
    rebaseDue: db.prepare(`UPDATE outbox SET next_attempt_at = ? WHERE state IN ('queued', 'unknown', 'training') AND finalized = 0 AND next_attempt_at > ?`),
    doneFaceResults: db.prepare(`SELECT result_json FROM outbox WHERE kind = 'faces' AND name = ? AND state = 'done' AND result_json IS NOT NULL`),
    startAttempt: db.prepare(`UPDATE outbox SET state = 'sending', attempts = attempts + 1, started_at = ?, action = ?, meta_json = ?,
      updated_at = ? WHERE id = ?`),
    setState: db.prepare(`UPDATE outbox SET state = ?, next_attempt_at = ?, meta_json = COALESCE(?, meta_json),
      result_json = COALESCE(?, result_json), final_path = COALESCE(?, final_path), last_error = ?, last_error_code = ?, last_status = ?,
      updated_at = ? WHERE id = ?`),
    setFinalPath: db.prepare('UPDATE outbox SET final_path = ?, updated_at = ? WHERE id = ?'),
    finalize: db.prepare('UPDATE outbox SET finalized = 1, staged_path = NULL, updated_at = ? WHERE id = ?'),
    counts: db.prepare(`SELECT kind, state, COUNT(*) AS n, MIN(CASE WHEN state IN ('done', 'failed') THEN NULL ELSE created_at END) AS oldest
      FROM outbox GROUP BY kind, state`),
    recentFailures: db.prepare(`SELECT ${ROW_COLUMNS} FROM outbox WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT ?`).raw(true),
    stagedPaths: db.prepare('SELECT staged_path FROM outbox WHERE staged_path IS NOT NULL'),
    mirrorGet: db.prepare('SELECT * FROM knowledge_mirror WHERE id = ?'),
    mirrorAll: db.prepare('SELECT * FROM knowledge_mirror ORDER BY id'),
    mirrorPut: db.prepare(`INSERT INTO knowledge_mirror (id, file, size, mtime_ms, content_sha256, uploaded, updated_at)
      VALUES (@id, @file, @size, @mtime_ms, @content_sha256, @uploaded, @now)
      ON CONFLICT(id) DO UPDATE SET file = excluded.file, size = excluded.size, mtime_ms = excluded.mtime_ms,
        content_sha256 = excluded.content_sha256, uploaded = MAX(uploaded, excluded.uploaded), updated_at = excluded.updated_at`),
    mirrorUploaded: db.prepare('UPDATE knowledge_mirror SET uploaded = 1, updated_at = ? WHERE id = ?'),
    mirrorDelete: db.prepare('DELETE FROM knowledge_mirror WHERE id = ?'),
    stateGet: db.prepare('SELECT value FROM enroll_state WHERE key = ?'),
    stateSet: db.prepare('INSERT INTO enroll_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value'),
  };

  return {
    insert(r: NewRow): number {
      const now = Date.now();
      const info = s.insert.run(r.kind, r.name, r.source_path, r.source_size, r.source_mtime_ms, r.staged_path, r.content_sha256, r.size,
        r.action ?? null, JSON.stringify(r.meta ?? {}), r.state, r.last_error ?? null, r.last_error_code ?? null, r.last_status ?? null,
        r.result_json ?? null, r.final_path ?? null, now, now);
      return Number(info.lastInsertRowid);
    },
    get: (id: number) => rowOrUndefined(s.get.get(id)),
    isActiveSource: (rel: string) => s.activeBySource.get(rel) !== undefined,
    /** The inbox paths of every unfinished row. */
    activeSources: () => new Set(s.activeSources.all() as string[]),
    doneByContent: (kind: Kind, name: string, sha: string) => rowOrUndefined(s.doneByContent.get(kind, name, sha)),
    isActiveContent: (kind: Kind, name: string, sha: string) => s.activeByContent.get(kind, name, sha) !== undefined,
    isActiveName: (kind: Kind, name: string) => s.activeName.get(kind, name) !== undefined,
    due: (state: RowState, now: number, limit: number) => rowsOf(s.due.all(state, now, limit)),
    /** Ids of queued rows that may start now, in order. */
    startable: (now: number, limit: number) => s.startable.all(now, limit) as number[],
    byState: (state: RowState) => rowsOf(s.byState.all(state)),
    /** Rows waiting for a side step, by state (absent: none). */
    sideSummary(): Partial<Record<RowState, SideSummary>> {
      const out: Partial<Record<RowState, SideSummary>> = {};
      for (const r of s.sideSummary.all() as (SideSummary & { state: RowState })[]) out[r.state] = r;
      return out;
    },
    unfinalized: (limit: number) => rowsOf(s.unfinalized.all(limit)),
    nextDue: () => (s.nextDue.get() as { t: number | null }).t,
    /** Waiting steps due after `after` made due at `now`; how many. */
    rebaseDue: (now: number, after: number): number => s.rebaseDue.run(now, after).changes,
    /** Face ids this agent already recorded for NAME: never taken as the result of another upload. */
    knownFaceIds(name: string): Set<string> {
      const ids = new Set<string>();
      for (const r of s.doneFaceResults.all(name) as { result_json: string }[]) {
        const id = (JSON.parse(r.result_json) as { face_id?: unknown }).face_id;
        if (typeof id === 'string') ids.add(id);
      }
      return ids;
    },
    startAttempt(id: number, action: string | null, meta: RowMeta): void {
      const now = Date.now();
      s.startAttempt.run(now, action, JSON.stringify(meta), now, id);
    },
    setState(id: number, state: RowState, f: { nextAttemptAt?: number; meta?: RowMeta; result?: unknown; finalPath?: string | null; error?: { message: string; code: string; status?: number | undefined } | null } = {}): void {
      s.setState.run(
        state, f.nextAttemptAt ?? 0, f.meta ? JSON.stringify(f.meta) : null, f.result === undefined ? null : JSON.stringify(f.result), f.finalPath ?? null,
        f.error?.message ?? null, f.error?.code ?? null, f.error?.status ?? null, Date.now(), id,
      );
    },
    setFinalPath: (id: number, path: string) => void s.setFinalPath.run(path, Date.now(), id),
    finalize: (id: number) => void s.finalize.run(Date.now(), id),
    counts: () => s.counts.all() as CountRow[],
    recentFailures: (limit: number) => rowsOf(s.recentFailures.all(limit)),
    stagedPaths: () => new Set((s.stagedPaths.all() as { staged_path: string }[]).map((r) => r.staged_path)),
    mirrorGet: (id: string) => s.mirrorGet.get(id) as KnowledgeMirrorRow | undefined,
    mirrorAll: () => s.mirrorAll.all() as KnowledgeMirrorRow[],
    mirrorPut: (r: KnowledgeMirrorRow) => void s.mirrorPut.run({ ...r, now: Date.now() }),
    mirrorUploaded: (id: string) => void s.mirrorUploaded.run(Date.now(), id),
    mirrorDelete: (id: string) => void s.mirrorDelete.run(id),
    counter: (key: string) => ((s.stateGet.get(key) as { value: number } | undefined)?.value ?? 0),
    setCounter: (key: string, value: number) => void s.stateSet.run(key, value),
  };
}

export function parseMeta(row: OutboxRow): RowMeta {
  return JSON.parse(row.meta_json) as RowMeta;
}
