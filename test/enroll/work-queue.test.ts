import { describe, expect, it } from 'vitest';
import { createWorkQueue } from '../../src/enroll/work-queue.js';

// The claims' queue (enrollment.ts): its limit is asked again whenever a key could start, so a
// deeper pipeline (pipeline-depth.ts) lets more claims run without a new queue.

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  return { open, opened };
}

describe('the work queue', () => {
  it('runs at most `limit` keys at once, each key once at a time', async () => {
    const g = gate();
    let running = 0;
    let most = 0;
    const q = createWorkQueue<number>(2, async () => {
      running++;
      most = Math.max(most, running);
      await g.opened;
      running--;
    }, () => {});
    for (const k of [1, 2, 3, 3, 4]) q.push(k);
    expect(running).toBe(2);
    expect(q.size()).toBe(4); // 3 pushed twice is queued once
    g.open();
    await q.idle();
    expect(most).toBe(2);
  });

  it('follows a limit given as a function when it grows', async () => {
    const g = gate();
    let limit = 1;
    let running = 0;
    const q = createWorkQueue<number>(() => limit, async () => {
      running++;
      await g.opened;
    }, () => {});
    for (let k = 0; k < 6; k++) q.push(k);
    expect(running).toBe(1);
    limit = 4;
    q.push(6); // the next chance to start one
    expect(running).toBe(4);
    g.open();
    await q.idle();
    expect(q.size()).toBe(0);
  });
});
