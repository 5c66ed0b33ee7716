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
 * "Equal jitter" exponential backoff: a random delay in [ceiling/2, ceiling], where
 * ceiling = min(cap, initial * factor^attempt). The random half spreads a fleet of terminals that
 * lost the network at the same moment; the fixed half keeps a retry from ever being immediate.
 * `attempt` counts from 0. `random` is injectable so tests can pin it.
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.initialMs * (policy.factor ?? 2) ** Math.max(0, attempt);
  const ceiling = Math.min(policy.maxMs, exp);
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
