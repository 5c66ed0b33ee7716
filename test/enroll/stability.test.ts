import { describe, expect, it } from 'vitest';
import { lstatSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createStabilityTracker } from '../../src/enroll/stability.js';
import { tmpDir } from '../helpers/tmp.js';
import { enrollFsFor } from './fixtures.js';

// The settle check on real files: a file is reported once it kept its size and mtime for
// settle_time, and the tracker's timer runs only while some file is followed, so an idle daemon
// is not woken 20 times a second.

// With its looks made in place and through the thread pool (enroll-fs.ts): the same behaviour.
describe.each([['in place', true], ['through the thread pool', false]] as const)('stability tracker, looks made %s', (_, onLoop) => {
  it('reports a file once it has settled, and keeps no timer while nothing is followed', async () => {
    const dir = tmpDir('ta-stability-');
    const stable: string[] = [];
    const tracker = createStabilityTracker({ settleMs: 200, abs: (rel) => join(dir, rel), onStable: (rel) => stable.push(rel), logger: pino({ level: 'silent' }), fs: await enrollFsFor(onLoop) });
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
    const tracker = createStabilityTracker({ settleMs: 100, abs: (rel) => { looks.push(rel); return join(dir, rel); }, onStable: (rel) => stable.push(rel), logger: pino({ level: 'silent' }), fs: await enrollFsFor(onLoop) });
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

  it('a burst: every file found at once is reported once, in the order it was found, but not one rewritten or removed meanwhile', async () => {
    // 50 files: more than one tick's window of looks made together (16), and a last partial one.
    const dir = tmpDir('ta-stability-');
    const stable: string[] = [];
    const tracker = createStabilityTracker({ settleMs: 150, abs: (rel) => join(dir, rel), onStable: (rel) => stable.push(rel), logger: pino({ level: 'silent' }), fs: await enrollFsFor(onLoop) });
    const names = Array.from({ length: 50 }, (_, i) => `f${String(49 - i).padStart(2, '0')}.jpg`);
    for (const n of names) writeFileSync(join(dir, n), `bytes of ${n}`);
    tracker.start();
    try {
      // With the watcher's lstat as each first look, so the changes below are surely after it.
      for (const n of names) tracker.touch(n, lstatSync(join(dir, n)));
      writeFileSync(join(dir, 'f30.jpg'), 'rewritten, and longer');
      rmSync(join(dir, 'f20.jpg'));
      const end = Date.now() + 5_000;
      while (stable.length < 49 && Date.now() < end) await sleep(20);
      await sleep(100);
      const unchanged = names.filter((n) => n !== 'f30.jpg' && n !== 'f20.jpg');
      // f30 settles later, from its own rewrite; f20 is forgotten.
      expect(stable).toEqual([...unchanged, 'f30.jpg']);
      expect(tracker.has('f20.jpg')).toBe(false);
      expect(tracker.ticking()).toBe(false);
    } finally {
      tracker.stop();
    }
  });
});
