import type { RecheckMode, RecheckStatus } from './recheck-status.js';

export type { RecheckMode, RecheckStatus } from './recheck-status.js';

// How many image re-checks (recheck.ts) a terminal may send, and what freshness that buys.
//
// Two budgets, each a bucket refilled by the clock, so that extra passes (enrollment's refreshes,
// a manual `faces sync`, retries) share the budget instead of adding to it:
// - requests, faces.recheck_requests_per_minute (default 200). With a service that answers 304 this
//   is the whole cost: 500 faces go round in one 5 min pass (100 a minute); 10,000 in ten passes,
//   50 min. A fleet of 1,000 terminals in such groups sends the service at most 3,300 conditional
//   GETs a second, each answered with headers only.
// - bytes, faces.recheck_bytes_per_hour (default 64 MB), counted from the bodies re-checks really
//   received. A service that answers no conditional request (mode `full`: it sends no validator,
//   or sends the same bytes again when asked with one) makes every re-check a full download: this
//   budget then sets the pace, at the cached images' mean size per re-check.
// A bucket holds at most one sync_interval and a minute of refill: an agent back from being offline
// does not burst, and a pass that took a while does not lose the time it took.

export interface RecheckBudget {
  requestsPerMinute: number;
  bytesPerHour: number;
}

/** What one pass's re-checks cost, and how the service answered them. */
export interface RecheckCost {
  sent: number;
  /** Answered 304. */
  notModified: number;
  /** Answered in full with the bytes the cache holds (no validator, or one ignored). */
  sameBody: number;
  /** Body bytes received (changed images included). */
  bytes: number;
}

export const NO_RECHECK_COST: RecheckCost = { sent: 0, notModified: 0, sameBody: 0, bytes: 0 };

/** The cache's side (face-store.ts recheckStats). */
export interface RecheckCacheStats {
  served: number;
  /** Served faces with an ETag or a Last-Modified recorded. */
  withValidators: number;
  meanBytes: number;
  /** The longest-unchecked served face's last check, ms epoch. */
  oldestCheckAt: number | null;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

export function createRecheckPacer() {
  let at: number | undefined;
  let requests = 0;
  let bytes = 0;
  let observed: RecheckMode = 'unknown';
  let deferred = 0;
  const recent: Array<{ at: number; sent: number; bytes: number }> = [];

  function modeOf(stats: RecheckCacheStats): RecheckMode {
    if (observed !== 'unknown') return observed;
    // No re-check answered yet: a cache with no validator at all came from a service that sends none.
    return stats.served > 0 && stats.withValidators === 0 ? 'full' : 'unknown';
  }

  function refill(now: number, budget: RecheckBudget, syncIntervalMs: number): void {
    const span = syncIntervalMs + MINUTE;
    const requestCap = (budget.requestsPerMinute * span) / MINUTE;
    const byteCap = (budget.bytesPerHour * span) / HOUR;
    if (at === undefined) {
      requests = requestCap;
      bytes = byteCap;
    } else {
      const dt = Math.max(0, now - at);
      requests = Math.min(requestCap, requests + (dt * budget.requestsPerMinute) / MINUTE);
      bytes = Math.min(byteCap, bytes + (dt * budget.bytesPerHour) / HOUR);
    }
    at = now;
  }

  /** Re-checks per ms: the request budget, and the byte budget when every re-check is a download. */
  function rate(budget: RecheckBudget, stats: RecheckCacheStats): { perMs: number; pacedBy: 'requests' | 'bytes' } {
    const byRequests = budget.requestsPerMinute / MINUTE;
    if (modeOf(stats) !== 'full') return { perMs: byRequests, pacedBy: 'requests' };
    const byBytes = budget.bytesPerHour / HOUR / Math.max(1, stats.meanBytes);
    return byBytes < byRequests ? { perMs: byBytes, pacedBy: 'bytes' } : { perMs: byRequests, pacedBy: 'requests' };
  }

  return {
    /** How many re-checks the pass starting at `now` may send. */
    allowance(now: number, budget: RecheckBudget, syncIntervalMs: number, stats: RecheckCacheStats): number {
      refill(now, budget, syncIntervalMs);
      let n = Math.floor(requests);
      if (modeOf(stats) === 'full') {
        // At least one when there is any byte budget left: an image larger than a pass's share still gets its turn.
        const byBytes = bytes <= 0 ? 0 : Math.max(1, Math.floor(bytes / Math.max(1, stats.meanBytes)));
        n = Math.min(n, byBytes);
      }
      return Math.max(0, n);
    },

    /** What a pass's re-checks cost; how they were answered settles the mode. */
    spend(now: number, cost: RecheckCost, deferredNow: number, budget: RecheckBudget, syncIntervalMs: number): void {
      // A debt of at most one bucket: a whole group replaced at once delays the next rounds, it does not stop them.
      const span = syncIntervalMs + MINUTE;
      requests = Math.max(-(budget.requestsPerMinute * span) / MINUTE, requests - cost.sent);
      bytes = Math.max(-(budget.bytesPerHour * span) / HOUR, bytes - cost.bytes);
      deferred = deferredNow;
      if (cost.notModified > 0 && cost.notModified >= cost.sameBody) observed = 'conditional';
      else if (cost.sameBody > 0) observed = 'full';
      if (cost.sent > 0) recent.push({ at: now, sent: cost.sent, bytes: cost.bytes });
      while (recent.length > 0 && recent[0]!.at <= now - HOUR) recent.shift();
    },

    mode: (stats: RecheckCacheStats): RecheckMode => modeOf(stats),

    status(now: number, budget: RecheckBudget, syncIntervalMs: number, stats: RecheckCacheStats): RecheckStatus {
      const { perMs, pacedBy } = rate(budget, stats);
      const hour = recent.filter((r) => r.at > now - HOUR);
      const oldest = stats.served > 0 ? stats.oldestCheckAt : null;
      return {
        mode: modeOf(stats),
        paced_by: pacedBy,
        oldest_check_at: oldest === null ? null : new Date(oldest).toISOString(),
        oldest_check_age_s: oldest === null ? null : Math.max(0, Math.round((now - oldest) / 1000)),
        round_s: stats.served === 0 ? null : Math.round(Math.max(syncIntervalMs, stats.served / perMs) / 1000),
        budget: { requests_per_minute: budget.requestsPerMinute, bytes_per_hour: budget.bytesPerHour },
        last_hour: { requests: hour.reduce((n, r) => n + r.sent, 0), bytes: hour.reduce((n, r) => n + r.bytes, 0) },
        deferred,
      };
    },
  };
}

export type RecheckPacer = ReturnType<typeof createRecheckPacer>;
