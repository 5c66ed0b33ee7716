import type { OutboxRow, StepOutcome } from './types.js';
import { describeRefusal, isStoreRefusal } from './store-refusal.js';
import { AbortedError, AuthError, ConfigError, DiskFullError, NetworkError, ServerError, ServiceError, TimeoutError, describeError, isAgentError } from '../errors.js';

// How the outbox reads an error from an upload: retry later or fail for good, and whether the
// service may have acted on the request anyway (then a blind retry could upload twice).

/**
 * no: the request surely had no effect (never sent, or the server answered 429);
 * unlikely: the server answered 5xx (normally nothing was done, but a server can fail after
 *   committing); unknown: the request was sent and no answer came (dropped, timed out).
 */
export type Applied = 'no' | 'unlikely' | 'unknown';

export interface Failure {
  retryable: boolean;
  applied: Applied;
  message: string;
  code: string;
  status: number | undefined;
  retryAfterMs: number | undefined;
  /** Credentials refused: nothing the file can fix, so it waits (longer) for the operator. */
  auth: boolean;
}

export function classifyFailure(err: unknown): Failure {
  const base = {
    message: describeError(err),
    code: isAgentError(err) ? err.code : 'TA_ERR_FAILURE',
    status: err instanceof ServiceError ? err.status : undefined,
    retryAfterMs: err instanceof ServiceError ? err.retryAfterMs : undefined,
    auth: false,
  };
  // Credentials refused or missing: nothing the file can fix, so it waits for the operator.
  if (err instanceof AuthError || err instanceof ConfigError) return { ...base, retryable: true, applied: 'no', auth: true };
  if (err instanceof NetworkError) return { ...base, retryable: true, applied: err.notSent ? 'no' : 'unknown' };
  if (err instanceof TimeoutError) return { ...base, retryable: true, applied: 'unknown' };
  if (err instanceof ServerError) return { ...base, retryable: true, applied: err.status === 429 ? 'no' : 'unlikely' };
  if (err instanceof AbortedError) return { ...base, retryable: true, applied: 'unknown' };
  // The free-space floor stopped a local copy before anything was sent: wait for space.
  if (err instanceof DiskFullError) return { ...base, retryable: true, applied: 'no' };
  // Whether the request left is told by the row: its "sending" mark is committed before it does
  // (a refused mark leaves it queued, and the step is retried), so here it is not known.
  if (isStoreRefusal(err)) return { ...base, message: `agent.db refused a change (${describeRefusal(err)})`, code: 'TA_ERR_STATE_DB', retryable: true, applied: 'unknown' };
  // 4xx other than 429, a 2xx with a non-zero code, a bad local file: retrying cannot help.
  return { ...base, retryable: false, applied: 'no' };
}

export const OUTCOME_UNKNOWN = 'TA_ERR_OUTCOME_UNKNOWN';

/** The error a step records from a failure: what status, `failed/*.error.json` and the metrics show. */
export const stepError = (f: Failure): NonNullable<StepOutcome['error']> => ({ message: f.message, code: f.code, status: f.status });

/** What a row's handler says of a request that may have reached the service (KindHandler.ifUnknown). */
export type UnknownDecision = 'retry' | 'reconcile' | 'fail';

/**
 * The step a retryable failure records: queued again for `until` (the pause's end); or, when the
 * request was sent and may have been acted on, what the handler decided: looked for at the
 * service once it can no longer be running there (`graceMs` after it started), or failed for good
 * when the service offers no way to look.
 */
export function retryOutcome(f: Failure, fresh: OutboxRow, decision: UnknownDecision, until: number, graceMs: number, now: number): StepOutcome {
  if (decision === 'fail') {
    return {
      state: 'failed',
      error: { message: `${f.message}; the service may or may not have registered it and offers no way to check: look with the service before dropping the file again`, code: OUTCOME_UNKNOWN, status: f.status },
    };
  }
  if (decision === 'reconcile') {
    const settleAt = f.applied === 'unknown' ? (fresh.started_at ?? now) + graceMs : now;
    return { state: 'unknown', nextAttemptAt: Math.max(settleAt, until), error: stepError(f) };
  }
  return { state: 'queued', nextAttemptAt: until, error: stepError(f) };
}
