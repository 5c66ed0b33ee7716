import { fdatasync } from 'node:fs';
import type { Flush } from '../../src/db/wal-sync.js';

/**
 * agent.db's WAL flush on an SD card, for the WAL syncer (db/wal-sync.ts Flush): the real
 * fdatasync, then `ms` more. Faked, because a flush of tens of ms cannot exist on this VM's disk
 * (1 to 3 ms). `count.n` counts the flushes made. (test/enroll/fixtures/enroll-worker.mjs, plain
 * JS run without vitest, makes the same one for ENROLL_WORKER_FLUSH_MS.)
 */
export function slowFlush(ms: number, count: { n: number } = { n: 0 }): Flush {
  return (fd, done) => fdatasync(fd, (err) => {
    count.n++;
    setTimeout(() => done(err), ms);
  });
}
