import { describe, expect, it } from 'vitest';
import { lstatSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createStabilityTracker } from '../../src/enroll/stability.js';
import { tmpDir } from '../helpers/tmp.js';

// The settle check on real files: a file is reported once it kept its size and mtime for
// settle_time, and the tracker's timer runs only while some file is followed, so an idle daemon
// is not woken 20 times a second.

describe('stability tracker', () => {
  it('reports a file once it has settled, and keeps no timer while nothing is followed', async () => {
    const dir = tmpDir('ta-stability-');
    const stable: string[] = [];
    const tracker = createStabilityTracker({ settleMs: 200, abs: (rel) => join(dir, rel), onStable: (rel) => stable.push(rel), logger: pino({ level: 'silent' }) });
    tracker.start();
    try {
      expect(tracker.ticking()).toBe(false);
      writeFileSync(join(dir, 'a.jpg'), 'first bytes');
      tracker.touch('a.jpg');
      expect(tracker.ticking()).toBe(true);
      // Still being written: the wait starts again from the change.
      await sleep(120);
      writeFileSync(join(dir, 'a.jpg'), 'first bytes, and more');
      await sleep(150);
      expect(stable).toEqual([]);
      const end = Date.now() + 5_000;
      while (stable.length === 0 && Date.now() < end) await sleep(20);
      expect(stable).toEqual(['a.jpg']);
      await sleep(120);
      expect(tracker.ticking()).toBe(false);
      // A file gone before it settled is forgotten, and the timer stops with it.
      tracker.touch('gone.jpg');
      expect(tracker.ticking()).toBe(true);
      await sleep(150);
      expect(tracker.has('gone.jpg')).toBe(false);
      expect(tracker.ticking()).toBe(false);
      expect(stable).toEqual(['a.jpg']);
    } finally {
      tracker.stop();
    }
    expect(tracker.ticking()).toBe(false);
  });

  it("takes the watcher's lstat as its first look (one look less), but never a symbolic link's", async () => {
    const dir = tmpDir('ta-stability-');
    const looks: string[] = [];
    const stable: string[] = [];
    const tracker = createStabilityTracker({ settleMs: 100, abs: (rel) => { looks.push(rel); return join(dir, rel); }, onStable: (rel) => stable.push(rel), logger: pino({ level: 'silent' }) });
    tracker.start();
    try {
      writeFileSync(join(dir, 'a.jpg'), 'bytes');
      symlinkSync(join(dir, 'a.jpg'), join(dir, 'l.jpg'));
      writeFileSync(join(dir, 'b.jpg'), 'bytes');
      const seenB = lstatSync(join(dir, 'b.jpg'));
      tracker.touch('a.jpg', lstatSync(join(dir, 'a.jpg')));
      tracker.touch('l.jpg', lstatSync(join(dir, 'l.jpg')));
      tracker.touch('b.jpg', seenB);
      // b.jpg grew after the watcher's look: the wait starts again from the tracker's own look.
      writeFileSync(join(dir, 'b.jpg'), 'bytes, and more');
      const end = Date.now() + 5_000;
      while (stable.length < 3 && Date.now() < end) await sleep(20);
      expect(stable.sort()).toEqual(['a.jpg', 'b.jpg', 'l.jpg']);
      expect(looks.filter((r) => r === 'a.jpg')).toHaveLength(1);
      expect(looks.filter((r) => r === 'l.jpg')).toHaveLength(2);
      expect(looks.filter((r) => r === 'b.jpg')).toHaveLength(2);
    } finally {
      tracker.stop();
    }
  });
});
