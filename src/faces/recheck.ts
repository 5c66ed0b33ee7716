import type { FaceRow } from './face-store.js';

// Image re-checks. GET /faces carries no version, so each cached image is asked again (If-None-Match)
// every image_recheck_interval. Had every image the same due time, the images of one large first sync
// would all fall due at the same moment: thousands of conditional GETs in one burst, every interval,
// from every terminal of a fleet. So a downloaded image is first due at a random point of the second
// half of the interval; later re-checks come one interval after the previous one, which keeps that
// spread; and a pass sends a bounded number of re-checks, the most overdue first, carrying the rest.

/** A pass may always do this many re-checks (a small group is re-checked in one pass). */
export const MIN_RECHECKS_PER_PASS = 32;

/** When an image downloaded at `fetchedAt` is first due: fetch + interval × uniform(0.5, 1). */
export function firstRecheckAt(fetchedAt: number, intervalMs: number, random: () => number): number {
  return fetchedAt + Math.round(intervalMs * (0.5 + 0.5 * random()));
}

/**
 * When a cached image is due. Never later than one interval after its last check, whatever was
 * stored (a reload may have shortened the interval). Rows from before due times were stored are
 * spread by their face_id (random hex) over the same half interval.
 */
export function recheckDueAt(row: Pick<FaceRow, 'face_id' | 'image_checked_at' | 'image_recheck_at'>, intervalMs: number): number {
  const checked = row.image_checked_at ?? 0;
  const latest = checked + intervalMs;
  if (row.image_recheck_at !== null) return Math.min(row.image_recheck_at, latest);
  const spread = Number.parseInt(row.face_id.slice(0, 8), 16) / 2 ** 32;
  return Math.min(checked + Math.round(intervalMs * (0.5 + 0.5 * (Number.isFinite(spread) ? spread : 1))), latest);
}

/**
 * Re-checks one pass may send. In the first interval after a large sync, faces fall due over half
 * the interval, so a pass every sync_interval finds about 2·N·sync_interval/interval of them due;
 * twice that lets a backlog (after being offline) drain within a few passes while each stays short.
 */
export function rechecksPerPass(faces: number, syncIntervalMs: number, intervalMs: number): number {
  return Math.max(MIN_RECHECKS_PER_PASS, Math.ceil((4 * faces * syncIntervalMs) / Math.max(1, intervalMs)));
}

/** The faces to re-check now: due ones, most overdue first, at most `limit`; and how many wait. */
export function pickRechecks<T extends { dueAt: number }>(due: T[], limit: number): { picked: T[]; deferred: number } {
  if (due.length <= limit) return { picked: due, deferred: 0 };
  due.sort((a, b) => a.dueAt - b.dueAt);
  return { picked: due.slice(0, limit), deferred: due.length - limit };
}
