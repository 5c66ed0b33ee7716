import { statfsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { DiskFullError } from '../errors.js';
import { formatSize } from '../util/units.js';
import type { DiskReading } from './disk-reading.js';

export type { DiskReading } from './disk-reading.js';

// The free space the agent keeps on the file system of state_dir. Its caches (face images and
// their staging downloads, the TTS cache, voiceprint audit copies) never write into the last
// `state_min_free` bytes, so that agent.db's WAL and the enrollment outbox can always commit: an
// enrolled file is never lost because a cache filled the disk.
//
// `state_min_free` is a size (64MB), a share of the file system (5%), or `auto`: 5 % of the file
// system, at least 64 MiB and at most 1 GiB. The cap: agent.db and the outbox need megabytes, and
// 5 % of a large disk (12 GB of 250 GB) would stop the caches with plenty of room left.

export const AUTO_MIN_FREE_BYTES = 64 * 1024 * 1024;
export const AUTO_MIN_FREE_MAX_BYTES = 1024 * 1024 * 1024;
export const AUTO_MIN_FREE_PERCENT = 5;

/** The resolved config value: bytes, a percentage of the file system, or auto. */
export type MinFree = { bytes: number } | { percent: number } | 'auto';

export interface DiskFloor {
  readonly dir: string;
  /** Free space now (one statfs call). */
  read(): Promise<DiskReading>;
  readSync(): DiskReading | undefined;
  /**
   * Throws DiskFullError when writing `bytes` more would leave less than the floor free. `what`
   * names the writer in the message (`face images`).
   */
  assertRoom(bytes: number, what: string): Promise<void>;
  /**
   * Like assertRoom, and holds `bytes` for a write that is about to happen (a download of known
   * length): writers running at the same time see it as taken, so eight parallel downloads cannot
   * each see the same free space. The holder reports what it wrote and releases the rest.
   */
  reserve(bytes: number, what: string): Promise<Reservation>;
}

export interface Reservation {
  /** `n` bytes of the reservation are now on disk (statfs counts them): hold that much less. */
  wrote(n: number): void;
  /** Bytes still held. */
  readonly left: number;
  release(): void;
}

export function minFreeBytes(minFree: MinFree, totalBytes: number): number {
  if (minFree === 'auto') return Math.max(AUTO_MIN_FREE_BYTES, Math.min(AUTO_MIN_FREE_MAX_BYTES, Math.ceil((totalBytes * AUTO_MIN_FREE_PERCENT) / 100)));
  if ('bytes' in minFree) return minFree.bytes;
  return Math.ceil((totalBytes * minFree.percent) / 100);
}

export function createDiskFloor(dir: string, minFree: MinFree): DiskFloor {
  const reading = (s: { bavail: number | bigint; blocks: number | bigint; bsize: number | bigint }): DiskReading => {
    const bsize = Number(s.bsize);
    const free = Number(s.bavail) * bsize;
    const total = Number(s.blocks) * bsize;
    const floor = minFreeBytes(minFree, total);
    return { dir, free_bytes: free, total_bytes: total, min_free_bytes: floor, nearly_full: free < floor };
  };
  /** Bytes reserved by writers and not written yet. */
  let held = 0;
  /** `own`: `bytes` are already in `held` (a reservation taken before the await, so that two cannot both pass). */
  async function check(bytes: number, what: string, own = false): Promise<void> {
    let r: DiskReading;
    try {
      r = reading(await statfs(dir));
    } catch {
      return; // cannot measure (folder gone): the write itself will say what is wrong
    }
    if (r.free_bytes - held - (own ? 0 : bytes) >= r.min_free_bytes) return;
    throw new DiskFullError(
      `disk nearly full: ${formatSize(r.free_bytes)} free on the file system of ${dir}; ${bytes > 0 ? `${what} need ${formatSize(bytes)} more, and ` : ''}`
      + `the agent keeps ${formatSize(r.min_free_bytes)} free (state_min_free) for agent.db and the enrollment outbox, so ${what} stopped. Free some space, or lower state_min_free`,
      { details: { path: dir, free_bytes: r.free_bytes, min_free_bytes: r.min_free_bytes, needed_bytes: bytes } },
    );
  }
  return {
    dir,
    async read() {
      return reading(await statfs(dir));
    },
    readSync() {
      try {
        return reading(statfsSync(dir));
      } catch {
        return undefined; // state_dir not there yet: nothing to say
      }
    },
    assertRoom: (bytes, what) => check(bytes, what),
    async reserve(bytes, what) {
      let left = bytes;
      held += left;
      try {
        await check(bytes, what, true);
      } catch (err) {
        held -= left;
        throw err;
      }
      return {
        get left() { return left; },
        wrote(n) {
          const d = Math.min(n, left);
          left -= d;
          held -= d;
        },
        release() {
          held -= left;
          left = 0;
        },
      };
    },
  };
}
