import type { Logger } from '../log/logger.js';
import type { Commit } from './commit-batcher.js';
import type { OutboxStore } from './outbox-store.js';

// The outbox's two clocks. A terminal's wall clock is stepped by NTP (forward at every boot of a
// device with no RTC, back when it ran ahead), so what lives only in memory (the pause after
// failures) runs on the monotonic clock; rows' due times outlive a restart, so they are wall-clock
// times, and a row due implausibly far ahead was scheduled before a step back.

/**
 * The longest a row may be scheduled ahead (a service's Retry-After is honoured up to this; every
 * other wait is shorter: backoff 60 s, training polls 10 min, an unknown outcome's grace 20 min).
 * A row due later than this was scheduled by a clock that has since been set back (NTP correcting
 * a clock that ran ahead): it is due now, not when the clock catches up.
 */
export const MAX_ROW_WAIT_MS = 60 * 60_000;

/** The pause of every upload after a failure, on the monotonic clock. */
export function createOutboxPause() {
  let until = 0; // performance.now() ms
  return {
    /** Paused for `ms` from now (a service's longer Retry-After is cut to MAX_ROW_WAIT_MS). */
    set(ms: number): void {
      until = performance.now() + Math.min(ms, MAX_ROW_WAIT_MS);
    },
    /** Paused at least `ms` from now. */
    extend(ms: number): void {
      until = Math.max(until, performance.now() + ms);
    },
    /** Milliseconds of pause left at monotonic time `mono` (<= 0: not paused). */
    leftAt(mono: number): number {
      return until - mono;
    },
    /** The pause's end as a wall-clock time (rows' due time, status); 0 when not paused. */
    wallEnd(): number {
      const left = until - performance.now();
      return left > 0 ? Date.now() + left : 0;
    },
  };
}

/**
 * Waiting steps due after now + MAX_ROW_WAIT_MS were scheduled before the clock was set back: due
 * now (logged once; `rescheduled` then). Returns the next due time to sleep until: now, or
 * `retryMs` on when agent.db refused the change (tried again then).
 */
export async function rescheduleAfterClockStep(deps: { store: OutboxStore; commit: Commit; logger: Logger }, now: number, next: number, retryMs: number, rescheduled: () => void): Promise<number> {
  let n = 0;
  try {
    await deps.commit(() => {
      n = deps.store.rebaseDue(now, now + MAX_ROW_WAIT_MS);
    });
  } catch (err) {
    deps.logger.error({ err }, 'agent.db refused to reschedule the outbox after the clock was set back; trying again');
    return now + retryMs;
  }
  deps.logger.warn({ rows: n, was_due: new Date(next).toISOString() }, `the clock was set back (a step of the outbox was due at ${new Date(next).toISOString()}, more than an hour from now): ${n} waiting steps are due now`);
  rescheduled();
  return now;
}
