import { setTimeout as sleep } from 'node:timers/promises';

export interface BackoffPolicy {
  /** First delay, ms. */
  initialMs: number;
  /** Cap on any delay, ms. */
  maxMs: number;
  /** Growth per attempt. */
  factor?: number;
}

/**
 * "Full jitter" exponential backoff: a random delay in [0, min(cap, initial * factor^attempt)].
 * Spreads a fleet of terminals that lost the network at the same moment.
 * `attempt` counts from 0. `random` is injectable so tests can pin it.
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.initialMs * (policy.factor ?? 2) ** Math.max(0, attempt);
  const ceiling = Math.min(policy.maxMs, exp);
  // Keep a floor of half the ceiling so that a retry is never immediate.
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * Waits `ms`, or less if `signal` aborts. Resolves `false` when aborted instead of throwing, so a
 * loop can write `if (!(await wait(ms, signal))) break;`.
 */
export async function wait(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === 'AbortError') return false;
    throw err;
  }
}
