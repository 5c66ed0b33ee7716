import { describe, expect, it } from 'vitest';
import { backoffDelay, wait } from '../../src/util/backoff.js';

describe('backoffDelay', () => {
  const policy = { initialMs: 100, maxMs: 5000 };

  it('grows exponentially within [ceiling/2, ceiling]', () => {
    expect(backoffDelay(policy, 0, () => 0)).toBe(50);
    expect(backoffDelay(policy, 0, () => 1)).toBe(100);
    expect(backoffDelay(policy, 3, () => 1)).toBe(800);
    expect(backoffDelay(policy, 3, () => 0)).toBe(400);
  });

  it('never exceeds the cap', () => {
    for (let attempt = 0; attempt < 40; attempt++) {
      expect(backoffDelay(policy, attempt)).toBeLessThanOrEqual(5000);
    }
    expect(backoffDelay(policy, 30, () => 1)).toBe(5000);
  });

  it('spreads delays (jitter)', () => {
    const seen = new Set(Array.from({ length: 50 }, () => backoffDelay(policy, 5)));
    expect(seen.size).toBeGreaterThan(10);
  });
});

describe('wait', () => {
  it('resolves true after the delay', async () => {
    expect(await wait(5)).toBe(true);
  });

  it('resolves false when aborted, before or during the wait', async () => {
    const ac = new AbortController();
    ac.abort();
    expect(await wait(10_000, ac.signal)).toBe(false);
    const ac2 = new AbortController();
    const pending = wait(10_000, ac2.signal);
    ac2.abort();
    expect(await pending).toBe(false);
  });
});
