import { fsyncDir } from '../util/fs-atomic.js';

// Renames and new names are durable once their folder is fsynced. A burst finalizes (and claims)
// files four at a time into the same folder: one folder fsync can cover every rename made before
// it started, so callers share them instead of paying a journal commit each.

export type DirSync = (dir: string) => Promise<void>;

interface Round {
  promise: Promise<void>;
}

export function createDirSync(): DirSync {
  /** Per folder: the fsync running now, and the one that will start after it (not yet started). */
  const running = new Map<string, Round>();
  const next = new Map<string, Round>();

  function start(dir: string): Round {
    const round: Round = {
      promise: fsyncDir(dir).finally(() => {
        if (running.get(dir) === round) running.delete(dir);
      }),
    };
    running.set(dir, round);
    return round;
  }

  return (dir: string): Promise<void> => {
    const current = running.get(dir);
    // Nothing running: start one, it covers this caller's renames.
    if (!current) return start(dir).promise;
    // One is running but may have started before this caller's rename: wait for the next one,
    // shared by everyone who asks meanwhile.
    let queued = next.get(dir);
    if (!queued) {
      const promise = current.promise.catch(() => undefined).then(() => {
        next.delete(dir);
        return start(dir).promise;
      });
      queued = { promise };
      next.set(dir, queued);
    }
    return queued.promise;
  };
}
