import { describe, expect, it } from 'vitest';
import { NetworkError, ServerError } from '../../src/errors.js';
import { classifyFailure, retryOutcome } from '../../src/enroll/failure.js';
import type { OutboxRow } from '../../src/enroll/types.js';

// What a failed upload becomes in the outbox (and so in status and in failed/NAME.error.json):
// retried after the pause, looked for at the service once the request can no longer be running
// there, or failed with a message that tells the operator to look before dropping the file again.

const row = { id: 7, started_at: 1_000 } as OutboxRow;

describe('retryOutcome', () => {
  it('queues a request that surely did nothing again for the end of the pause, keeping the error for status', () => {
    const f = classifyFailure(new ServerError('the service answered 429', { status: 429 }));
    expect(f).toMatchObject({ retryable: true, applied: 'no' });
    expect(retryOutcome(f, row, 'retry', 50_000, 30_000, 2_000)).toEqual({
      state: 'queued', nextAttemptAt: 50_000, error: { message: 'the service answered 429', code: 'TA_ERR_SERVER', status: 429 },
    });
  });

  it('reconciles a request whose answer was lost once it can no longer be running at the service, and not before the pause ends', () => {
    const f = classifyFailure(new NetworkError('connection reset'));
    expect(f.applied).toBe('unknown');
    expect(retryOutcome(f, row, 'reconcile', 5_000, 30_000, 2_000)).toMatchObject({ state: 'unknown', nextAttemptAt: 31_000 });
    expect(retryOutcome(f, row, 'reconcile', 90_000, 30_000, 2_000)).toMatchObject({ state: 'unknown', nextAttemptAt: 90_000 });
    // A 5xx answered: nothing runs there any more, only the pause is waited for.
    const answered = classifyFailure(new ServerError('bad gateway', { status: 502 }));
    expect(retryOutcome(answered, row, 'reconcile', 5_000, 30_000, 2_000)).toMatchObject({ state: 'unknown', nextAttemptAt: 5_000 });
  });

  it('fails, telling the operator to look at the service first, when the service offers no way to check', () => {
    const f = classifyFailure(new NetworkError('socket hang up'));
    expect(retryOutcome(f, row, 'fail', 5_000, 30_000, 2_000)).toEqual({
      state: 'failed',
      error: {
        message: 'socket hang up; the service may or may not have registered it and offers no way to check: look with the service before dropping the file again',
        code: 'TA_ERR_OUTCOME_UNKNOWN', status: undefined,
      },
    });
  });
});
