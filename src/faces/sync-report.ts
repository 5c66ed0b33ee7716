import { AgentError, AuthError, describeError } from '../errors.js';
import { describeSkip } from '../client/faces-api.js';
import type { SkippedRecord, SkipReason } from '../client/types.js';
import type { SyncRunRow } from './face-store.js';
import type { SyncErrorInfo, SyncReason, SyncReport } from './types.js';
import type { Logger } from 'pino';
import type { FaceMetrics } from './face-metrics.js';

// What a face sync's outcome looks like to status, the log and the events: its report, the error of
// a failed sync with its fix, the last run as agent.db remembers it across a restart, and the
// records it skipped.

export function errorInfo(err: unknown): SyncErrorInfo {
  if (err instanceof AuthError) {
    return {
      code: err.code, exit_code: err.exitCode, ...(err.status !== undefined ? { status: err.status } : {}),
      message: `${err.message}; face sync is stopped until the configuration is reloaded: fix service.terminal_secret (or terminal_secret_file), then reload the agent (systemctl reload terminal-agent)`,
    };
  }
  if (err instanceof AgentError) {
    const status = (err as { status?: number }).status;
    return { code: err.code, message: err.message, exit_code: err.exitCode, ...(status !== undefined ? { status } : {}) };
  }
  return { code: 'TA_ERR_FAILURE', message: describeError(err), exit_code: 1 };
}

export function reportFromRun(run: SyncRunRow | undefined): SyncReport | null {
  if (!run) return null;
  return {
    reason: 'start', ok: run.ok === 1, started_at: new Date(run.started_at).toISOString(),
    finished_at: new Date(run.finished_at ?? run.started_at).toISOString(), duration_ms: run.duration_ms ?? 0,
    added: run.added, updated: run.updated, removed: run.removed, failed: run.failed, image_requests: run.image_requests,
    changed: false, faces_cached: 0,
    error: run.error ? { code: run.error_code ?? 'TA_ERR_FAILURE', message: run.error, exit_code: 1 } : null, failures: [], ...NO_SKIPS,
  };
}

export const NO_SKIPS = { skipped: 0, skipped_reasons: {}, skipped_records: [] } as const satisfies Pick<SyncReport, 'skipped' | 'skipped_reasons' | 'skipped_records'>;

export function skippedFields(skipped: readonly SkippedRecord[]): Pick<SyncReport, 'skipped' | 'skipped_reasons' | 'skipped_records'> {
  const reasons: Partial<Record<SkipReason, number>> = {};
  for (const s of skipped) reasons[s.reason] = (reasons[s.reason] ?? 0) + 1;
  return { skipped: skipped.length, skipped_reasons: reasons, skipped_records: skipped.slice(0, 20).map(describeSkip) };
}

type ReportFields = Omit<SyncReport, 'reason' | 'started_at' | 'finished_at' | 'duration_ms' | 'faces_cached'>;

export function finishedReport(reason: SyncReason, startedAt: number, durationMs: number, facesCached: number, fields: ReportFields): SyncReport {
  return { reason, started_at: new Date(startedAt).toISOString(), finished_at: new Date(startedAt + durationMs).toISOString(), duration_ms: durationMs, faces_cached: facesCached, ...fields };
}

/** The report of a sync that did not run (stopped, a refused credential, a malformed face_id). */
export function refusedReport(reason: SyncReason, error: SyncErrorInfo, facesCached: number, at: number): SyncReport {
  return finishedReport(reason, at, 0, facesCached, {
    ok: false, added: 0, updated: 0, removed: 0, failed: 0, image_requests: 0, changed: false, error, failures: [], ...NO_SKIPS,
  });
}

/** Malformed records of the listing are counted by reason and logged once per sync, with a few examples. */
export function reportSkipped(skipped: readonly SkippedRecord[], log: Logger, metrics: FaceMetrics): void {
  if (skipped.length === 0) return;
  const fields = skippedFields(skipped);
  for (const [reason, n] of Object.entries(fields.skipped_reasons)) metrics.skipped(reason, n);
  log.warn({ skipped: skipped.length, reasons: fields.skipped_reasons, first: fields.skipped_records.slice(0, 3) },
    `${skipped.length} record(s) of GET /faces are malformed and were skipped; the other faces were synced`);
}
