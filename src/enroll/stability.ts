import type { Stats } from 'node:fs';
import type { Logger } from '../log/logger.js';
import type { EnrollFs } from './enroll-fs.js';

// A file is taken only once its size and mtime have not changed for settle_time, whatever event
// (or rescan) brought it here: chokidar's awaitWriteFinish does not cover files found at start-up,
// and scp, Samba or a USB copy give no "closed" signal we could trust.

interface Watch {
  size: number;
  mtimeMs: number;
  since: number; // performance.now() ms: a wall clock set back would hold files for as long
}

export interface StabilityTrackerDeps {
  settleMs: number;
  abs(rel: string): string;
  /**
   * `rel` has settled. `lstat` is the look that said so when the path is not a symbolic link: the
   * claim takes it as its own first look (a stale one only makes the claim see a change and wait
   * again, never read the wrong bytes: claim.ts compares it with the file after reading).
   */
  onStable(rel: string, lstat?: Stats): void;
  logger: Logger;
  /** Where the looks are made (enroll-fs.ts). */
  fs: LookFs;
}

type LookFs = Pick<EnrollFs, 'lstat' | 'stat'>;

export type StabilityTracker = ReturnType<typeof createStabilityTracker>;

/** The file's size and mtime (a symbolic link's target's); `own` is its lstat when it is no link. */
async function look(fs: LookFs, path: string): Promise<{ size: number; mtimeMs: number; own?: Stats } | undefined> {
  let l: Stats;
  try {
    l = await fs.lstat(path);
  } catch {
    return undefined;
  }
  if (!l.isSymbolicLink()) return { size: l.size, mtimeMs: l.mtimeMs, own: l };
  // A link follows its target; a dangling one is still something to refuse (the claim says why).
  return fs.stat(path).catch(() => l);
}

/**
 * Looks made at once in a tick: through the pool (enroll-fs.ts), lstats made together share the
 * wake-ups of a pool thread and of the event loop, one at a time each pays its own. Bounded, so
 * that a tick's looks never queue more than this in front of the uploads' own pool work.
 */
const LOOK_WINDOW = 16;

export function createStabilityTracker(deps: StabilityTrackerDeps) {
  const watching = new Map<string, Watch | null>();
  // A file is taken at the first tick after its settle_time is over: at most one tick late. A
  // tick only walks the map (files are looked at when first seen and when due), so a short one is cheap.
  const tickMs = Math.max(20, Math.min(50, Math.floor(deps.settleMs / 4)));
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let ticking = false;

  // The timer runs only while a file is followed: a daemon with nothing arriving must not wake 20
  // times a second (that alone was 0.3 % of a core at idle).
  function arm(): void {
    if (started && !timer && watching.size > 0) timer = setInterval(() => void tick(), tickMs);
  }
  function disarm(): void {
    if (timer) clearInterval(timer);
    timer = undefined;
  }

  /** What one look found, applied in the order the files were met. */
  function apply(rel: string, st: Awaited<ReturnType<typeof look>>, now: number): void {
    const prev = watching.get(rel);
    if (prev === undefined) return; // forgotten meanwhile
    if (!st) {
      watching.delete(rel);
      return;
    }
    const mtimeMs = Math.floor(st.mtimeMs);
    if (!prev || prev.size !== st.size || prev.mtimeMs !== mtimeMs) {
      // From this look (a tick's looks take a while in a burst): the wait is never shortened.
      watching.set(rel, { size: st.size, mtimeMs, since: performance.now() });
    } else if (now - prev.since >= deps.settleMs) {
      watching.delete(rel);
      deps.onStable(rel, 'own' in st ? st.own : undefined);
    }
  }

  async function tick(): Promise<void> {
    if (ticking) return;
    ticking = true;
    try {
      const now = performance.now();
      let due: string[] = [];
      const lookAll = async () => {
        const rels = due;
        due = [];
        const found = await Promise.all(rels.map((rel) => look(deps.fs, deps.abs(rel))));
        for (let i = 0; i < rels.length; i++) apply(rels[i]!, found[i], now);
      };
      // Walked live, not copied (every tick, a thousand entries in a burst): entries deleted or
      // changed meanwhile are safe to meet, and files touched meanwhile are looked at too.
      for (const [rel, prev] of watching) {
        // Looked at only when first seen and once settle_time has passed: a change in between
        // shows as a different size or mtime then (and restarts the wait), so the looks in
        // between only cost a stat per file per tick, a thousand per tick in a burst.
        if (prev && now - prev.since < deps.settleMs) continue;
        due.push(rel);
        if (due.length === LOOK_WINDOW) await lookAll();
      }
      if (due.length > 0) await lookAll();
    } catch (err) {
      deps.logger.warn({ err }, 'stability check failed');
    } finally {
      ticking = false;
      if (watching.size === 0) disarm();
    }
  }

  return {
    /**
     * Starts following `rel` (a no-op when followed already: each tick notices changes itself).
     * `seen`: an lstat made just now by whoever noticed the file (the folder watcher's), taken as
     * the first look instead of one more thread-pool trip. Its time is now or later than the
     * lstat, so the wait is never shortened: a change after that lstat shows at the next look.
     */
    touch(rel: string, seen?: Stats): void {
      if (!watching.has(rel)) {
        // A symbolic link's own lstat says nothing of its target: look() follows it.
        watching.set(rel, seen && !seen.isSymbolicLink() ? { size: seen.size, mtimeMs: Math.floor(seen.mtimeMs), since: performance.now() } : null);
      }
      arm();
    },
    has: (rel: string) => watching.has(rel),
    size: () => watching.size,
    start(): void {
      started = true;
      arm();
    },
    stop(): void {
      started = false;
      disarm();
      watching.clear();
    },
    /** The tick timer is armed (for the idle test). */
    ticking: () => timer !== undefined,
  };
}
