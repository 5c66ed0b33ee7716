import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLoginLimiter } from '../../src/console/login-limiter.js';
import { createSessionStore } from '../../src/console/sessions.js';
import { steppableWallClock } from '../helpers/wall-clock.js';

// Sessions and the login limiter with their own clock (none given), while the wall clock is set
// back by a day, as NTP does to a clock that ran ahead (helpers/wall-clock.ts).

const DAY = 24 * 60 * 60_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('console sessions and logins under a clock set back', () => {
  it('a session still ends after its lifetime', async () => {
    const clock = steppableWallClock();
    const sessions = createSessionStore({ ttlMs: 200 });
    const s = sessions.create();
    expect(sessions.get(s.id)).toBeDefined();
    clock.step(-DAY);
    await sleep(300);
    expect(sessions.get(s.id)).toBeUndefined();
  });

  it('an address that used up its login tries gets them back after the refill period', async () => {
    const clock = steppableWallClock();
    const limiter = createLoginLimiter({ burst: 2, refillMs: 200 });
    expect([limiter.take('192.0.2.7'), limiter.take('192.0.2.7')]).toEqual([0, 0]);
    expect(limiter.take('192.0.2.7')).toBe(1);
    clock.step(-DAY);
    await sleep(300);
    expect(limiter.take('192.0.2.7')).toBe(0);
  });
});
