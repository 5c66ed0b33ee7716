import type { FaceRow } from './face-store.js';

// Image re-checks. GET /faces carries nothing that changes when only an image does (service-api.md
// shows no version, date or hash), so the only way to see a replaced image is to ask for it again:
// a conditional GET (If-None-Match / If-Modified-Since) that costs a 304 when nothing changed, or a
// full download from a service that answers no conditional request. Each pass asks again for the
// images checked longest ago, going round the group, as many as the re-check budget allows
// (recheck-pacer.ts): a group of a few hundred goes round every pass, a large one in several.
// A face past its image_recheck_at goes first: an image seeded from this agent's upload (the
// service may keep other bytes: seed-pass.ts), or one the round has not reached in
// image_recheck_interval (a slow round, paced by the byte budget).

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

/** When an image downloaded at `fetchedAt` is due at the latest (image_recheck_at): fetch + interval × uniform(0.5, 1). */
export function firstRecheckAt(fetchedAt: number, intervalMs: number, random: () => number): number {
  return fetchedAt + Math.round(intervalMs * (0.5 + 0.5 * random()));
}

/** A cached face the round may ask about: when it was last asked, and when it is due at the latest. */
export interface RoundCandidate {
  checkedAt: number;
  /** image_recheck_at when it has passed, else null. */
  overdueSince: number | null;
}

/**
 * Where a cached face stands in the round, or null when a timed pass leaves it alone: a face past
 * its image_recheck_at (an image seeded from an upload, due at the next sync; one unchecked for
 * image_recheck_interval) may always be asked; another once it was last asked `minAgeMs` ago.
 */
export function roundCandidate(row: Pick<FaceRow, 'image_checked_at' | 'image_recheck_at'>, nowMs: number, minAgeMs: number): RoundCandidate | null {
  const checkedAt = row.image_checked_at ?? 0;
  const overdueSince = row.image_recheck_at !== null && row.image_recheck_at <= nowMs ? row.image_recheck_at : null;
  if (overdueSince === null && nowMs - checkedAt < minAgeMs) return null;
  return { checkedAt, overdueSince };
}

/** Overdue faces first (longest overdue first), then the longest unchecked. */
function roundOrder(a: RoundCandidate, b: RoundCandidate): number {
  if (a.overdueSince !== null || b.overdueSince !== null) {
    if (a.overdueSince === null) return 1;
    if (b.overdueSince === null) return -1;
    return a.overdueSince - b.overdueSince;
  }
  return a.checkedAt - b.checkedAt;
}

/** The faces to re-check now, in round order, at most `limit`; and how many wait. */
export function pickOldest<T extends RoundCandidate>(candidates: T[], limit: number): { picked: T[]; deferred: number } {
  const n = Math.max(0, Math.floor(limit));
  if (candidates.length <= n) return { picked: candidates, deferred: 0 };
  candidates.sort(roundOrder);
  return { picked: candidates.slice(0, n), deferred: candidates.length - n };
}
