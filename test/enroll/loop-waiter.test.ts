import { describe, expect, it } from 'vitest';
import { createLoopWaiter } from '../../src/enroll/loop-waiter.js';

// The outbox loop's sleep, with real timers: it ends at its time, at a wake(), or at the abort of
// the run it is attached to, and one listener serves every sleep of a run.

describe('loop waiter', () => {
  it('ends at its time (true), or early at a wake() (false); a wake() between sleeps is not kept', async () => {
    const w = createLoopWaiter();
    const t0 = performance.now();
    expect(await w.sleep(30)).toBe(true);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
    w.wake();
    const t1 = performance.now();
    const early = w.sleep(5_000);
    setTimeout(() => w.wake(), 10);
    expect(await early).toBe(false);
    expect(performance.now() - t1).toBeLessThan(1_000);
  });

  it('ends every sleep of a run at its abort with one listener, and none once detached', async () => {
    const w = createLoopWaiter();
    const run = new AbortController();
    const added: string[] = [];
    const add = run.signal.addEventListener.bind(run.signal);
    run.signal.addEventListener = ((type: string, ...rest: unknown[]) => {
      added.push(type);
      return (add as (...a: unknown[]) => void)(type, ...rest);
    }) as typeof run.signal.addEventListener;
    const detach = w.attach(run.signal);
    for (let i = 0; i < 3; i++) {
      const s = w.sleep(5);
      expect(await s).toBe(true);
    }
    expect(added).toEqual(['abort']);
    const long = w.sleep(5_000);
    setTimeout(() => run.abort(), 10);
    expect(await long).toBe(false);
    detach();
    const other = new AbortController();
    const detach2 = w.attach(other.signal);
    detach2();
    other.abort();
    expect(await w.sleep(20)).toBe(true);
  });
});
