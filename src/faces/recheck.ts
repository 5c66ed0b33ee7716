import type { FaceRow } from './face-store.js';

// Image re-checks. GET /faces carries nothing that changes when only an image does (service-api.md
// shows no version, date or hash), so the only way to see a replaced image is to ask for it again:
// a conditional GET (If-None-Match / If-Modified-Since) that costs a 304 when nothing changed, or a
// full download from a service that answers no conditional request. Each pass asks again for the
// images checked longest ago, going round the group, as many as the re-check budget allows
// (recheck-pacer.ts): a group of a few hundred goes round every pass, a large one in several.

/**
 * A face checked more recently than this is not asked again by a timed pass (a refresh right after
 * a pass, or a retry, would otherwise ask the whole group twice). A manual `faces sync` passes 0.
 */
export function recheckMinAge(syncIntervalMs: number): number {
  return Math.floor(syncIntervalMs / 2);
}

/**
 * The wait before the next timed pass: sync_interval less up to a tenth, at random. Terminals of a
 * fleet started together (an upgrade, a power cut) would otherwise send their passes' re-checks in
 * the same seconds for ever; this drifts them apart within a few passes, and a pass still comes
 * within one sync_interval of the last.
 */
export function timedPassDelay(syncIntervalMs: number, random: () => number): number {
  return Math.round(syncIntervalMs * (0.9 + 0.1 * random()));
}

/** When an image downloaded at `fetchedAt` is due at the latest: fetch + interval × uniform(0.5, 1) (image_recheck_at). */
export function firstRecheckAt(fetchedAt: number, intervalMs: number, random: () => number): number {
  return fetchedAt + Math.round(intervalMs * (0.5 + 0.5 * random()));
}

/** When a cached image was last asked for; a row from before that was recorded counts as never. */
export function lastCheckedAt(row: Pick<FaceRow, 'image_checked_at'>): number {
  return row.image_checked_at ?? 0;
}

/** The faces to re-check now: the longest unchecked first, at most `limit`; and how many wait. */
export function pickOldest<T extends { checkedAt: number }>(candidates: T[], limit: number): { picked: T[]; deferred: number } {
  const n = Math.max(0, Math.floor(limit));
  if (candidates.length <= n) return { picked: candidates, deferred: 0 };
  candidates.sort((a, b) => a.checkedAt - b.checkedAt);
  return { picked: candidates.slice(0, n), deferred: candidates.length - n };
}
