import type { Db } from '../db/database.js';
import type { FailureSummary, SyncRunSummary } from '../control/types.js';
import type { SyncRunRow } from '../faces/face-store.js';

// Figures for status, STATUS= and metrics, read straight from agent.db so that they are right even
// when a component is missing or busy, and cost one indexed query each. Prepared once; a table that
// does not exist (an older schema) gives empty answers instead of failing the status call.

/** A sync_runs row (the faces capability owns the table); status does not show image_requests. */
type SyncRow = Omit<SyncRunRow, 'image_requests'>;

export interface StateQueries {
  lastSync(): SyncRunSummary | null;
  lastOkSyncAt(): number | null;
  cachedFaces(): number | null;
  outbox(): Record<string, Record<string, number>>;
  recentFailures(limit: number): FailureSummary[];
}

export function createStateQueries(db: Db): StateQueries {
  const prep = <T>(sql: string) => {
    try {
      return db.prepare<unknown[], T>(sql);
    } catch {
      return undefined;
    }
  };
  const lastSync = prep<SyncRow>('SELECT * FROM sync_runs ORDER BY id DESC LIMIT 1');
  const lastOk = prep<{ t: number | null }>('SELECT max(finished_at) AS t FROM sync_runs WHERE ok = 1');
  const faceCount = prep<{ n: number }>('SELECT count(*) AS n FROM faces WHERE image_file IS NOT NULL');
  const outbox = prep<{ kind: string; state: string; n: number }>('SELECT kind, state, count(*) AS n FROM outbox GROUP BY kind, state');
  const syncFailures = prep<SyncRow & { id: number }>('SELECT * FROM sync_runs WHERE ok = 0 AND error IS NOT NULL ORDER BY id DESC LIMIT ?');
  const outboxFailures = prep<{ kind: string; name: string; last_error: string | null; last_error_code: string | null; updated_at: number; state: string }>(
    "SELECT kind, name, last_error, last_error_code, updated_at, state FROM outbox WHERE last_error IS NOT NULL AND state != 'done' ORDER BY updated_at DESC LIMIT ?",
  );

  return {
    lastSync() {
      const r = lastSync?.get();
      return r ? syncSummary(r) : null;
    },
    lastOkSyncAt: () => lastOk?.get()?.t ?? null,
    cachedFaces: () => faceCount?.get()?.n ?? null,
    outbox() {
      const out: Record<string, Record<string, number>> = {};
      for (const r of outbox?.all() ?? []) (out[r.kind] ??= {})[r.state] = r.n;
      return out;
    },
    recentFailures(limit) {
      const list: FailureSummary[] = [];
      for (const r of syncFailures?.all(limit) ?? []) {
        list.push({ at: iso(r.finished_at ?? r.started_at)!, source: 'faces', error: r.error ?? 'sync failed', code: r.error_code });
      }
      for (const r of outboxFailures?.all(limit) ?? []) {
        list.push({ at: iso(r.updated_at)!, source: 'outbox', kind: r.kind, name: r.name, error: r.last_error ?? r.state, code: r.last_error_code });
      }
      return list.sort((a, b) => b.at.localeCompare(a.at)).slice(0, limit);
    },
  };
}

function syncSummary(r: SyncRow): SyncRunSummary {
  return {
    started_at: iso(r.started_at)!,
    finished_at: iso(r.finished_at),
    duration_ms: r.duration_ms,
    ok: r.ok === 1,
    added: r.added,
    updated: r.updated,
    removed: r.removed,
    failed: r.failed,
    error: r.error,
    error_code: r.error_code,
  };
}

export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** Outbox rows still to do (not done, not failed), per kind. */
export function pendingPerKind(outbox: Record<string, Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [kind, states] of Object.entries(outbox)) {
    out[kind] = Object.entries(states).filter(([s]) => s !== 'done' && s !== 'failed').reduce((a, [, n]) => a + n, 0);
  }
  return out;
}
