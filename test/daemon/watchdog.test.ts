import { afterEach, describe, expect, it, vi } from 'vitest';
import { join } from 'node:path';
import { createNotifier, watchdogIntervalMs } from '../../src/daemon/sd-notify.js';
import { createWatchdog, stuckWhileBusy } from '../../src/daemon/watchdog.js';
import { silentLogger } from '../../src/log/logger.js';
import { tmpDir } from '../helpers/tmp.js';
import { steppableWallClock } from '../helpers/wall-clock.js';
import { listenNotify } from './daemon-harness.js';

// A wedged sync cannot be produced on demand in a real daemon (every request has a deadline), so
// here the component's "busy" flag is driven by the test; the notifier and socket are real.

afterEach(() => {
  vi.restoreAllMocks();
});

describe('watchdog', () => {
  it('withholds WATCHDOG=1 while a component is busy without progress, and feeds it again after', async () => {
    const notify = listenNotify(join(tmpDir('ta-wd-'), 'notify.sock'));
    const notifier = createNotifier({ socketPath: notify.path, logger: silentLogger() });
    let t = 0;
    let busy = false;
    let finished = 0;
    const check = stuckWhileBusy('face sync', 1000, () => busy, () => finished);
    const wd = createWatchdog({ notifier, watchdogMs: 10_000, checks: () => [check], statusLine: () => 'all good', logger: silentLogger(), now: () => t });

    await wd.tick();
    await notify.waitFor(() => notify.messages.length === 1);
    expect(notify.messages[0]).toBe('WATCHDOG=1\nSTATUS=all good');
    busy = true;
    t = 500;
    await wd.tick();
    t = 1200;
    await wd.tick(); // busy for 700 ms: not yet stuck
    await notify.waitFor(() => notify.messages.length === 3);
    expect(notify.messages.slice(1)).toEqual(['WATCHDOG=1', 'WATCHDOG=1']);
    t = 2000;
    await wd.tick(); // 1500 ms with no finished work: stuck
    await notify.waitFor(() => notify.messages.length === 4);
    expect(notify.messages[3]).toMatch(/^STATUS=stuck: face sync: busy for 2s/);
    expect(notify.messages[3]).not.toContain('WATCHDOG=1');
    expect(wd.status().failing).toHaveLength(1);
    t = 3000;
    await wd.tick(); // still stuck: the STATUS text moves on, but no ping
    await notify.waitFor(() => notify.messages.length === 5);
    expect(notify.messages[4]).toMatch(/^STATUS=stuck: face sync: busy for 3s/);

    finished += 1; // work finishes again: progress, even though still busy
    t = 3100;
    await wd.tick();
    await notify.waitFor(() => notify.messages.length === 6);
    expect(notify.messages[5]).toBe('WATCHDOG=1\nSTATUS=all good');
    notifier.close();
  });

  it('a wall clock set forward by a day (NTP at the boot of a terminal) does not make a busy component look stuck', async () => {
    const notify = listenNotify(join(tmpDir('ta-wd-'), 'notify.sock'));
    const notifier = createNotifier({ socketPath: notify.path, logger: silentLogger() });
    const check = stuckWhileBusy('face sync', 1000, () => true);
    const clock = steppableWallClock();
    const wall = Date.now();
    // The daemon's own clock (no `now` given).
    const wd = createWatchdog({ notifier, watchdogMs: 10_000, checks: () => [check], statusLine: () => 'all good', logger: silentLogger() });
    await wd.tick();
    clock.step(24 * 60 * 60_000);
    await wd.tick();
    await notify.waitFor(() => notify.messages.length === 2);
    expect(notify.messages).toEqual(['WATCHDOG=1\nSTATUS=all good', 'WATCHDOG=1']);
    expect(wd.status().failing).toEqual([]);
    // The last ping is shown as a wall-clock time, the clock as it is now.
    expect(Date.parse(wd.status().last_fed_at!)).toBeGreaterThan(wall + 23 * 60 * 60_000);
    notifier.close();
  });

  it('a queue that keeps finishing work is never stuck, however long it stays busy', () => {
    let n = 0;
    const check = stuckWhileBusy('uploads', 1000, () => true, () => n);
    for (let t = 0; t < 10_000; t += 500) {
      n += 1;
      expect(check.check(t)).toBeUndefined();
    }
  });

  it('reads WATCHDOG_USEC only when WATCHDOG_PID is ours', () => {
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000' }, 42)).toBe(30_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' }, 42)).toBe(30_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '7' }, 42)).toBeUndefined();
    expect(watchdogIntervalMs({}, 42)).toBeUndefined();
  });

  it('with no NOTIFY_SOCKET, notifications are no-ops', async () => {
    const n = createNotifier({ socketPath: undefined, logger: silentLogger() });
    expect(n.enabled).toBe(false);
    await n.notify({ READY: 1 });
  });
});
