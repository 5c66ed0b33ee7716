import { statOrUndefined } from '../util/state-fs.js';
import type { Stats } from 'node:fs';

// The bytes a claim read (and hashed) of a small face image, kept for its upload: without them the
// upload opens, reads and hashes the staged copy again (staged-body.ts): four thread-pool round
// trips and a sha256 per file.
//
// Kept in memory only, so a power failure cannot tear them; what the upload must still notice is
// an operator rewriting the original in place while its staged copy is a hard link to it. So a
// linked copy is looked at (one stat) and the kept bytes are used only while it is the inode the
// claim read, with the same size, mtime and ctime; otherwise the upload takes the checked path
// (hash against the claim, then the original, or TA_ERR_STAGED_COPY_LOST). A copy written from
// the bytes is the agent's own and needs no look.
//
// Bounded (a burst claims far ahead of its uploads): the oldest claims are kept, which is the
// order the uploads come in, and later ones are kept as uploads make room; an entry nobody takes
// (a row cancelled or failed before its upload) ages out.

/** Bytes of face images kept between claim and upload, per step of the pipeline's depth (pipeline-depth.ts). */
const KEPT_MAX_BYTES = 1024 * 1024;
/** A kept entry older than this is dropped: its upload did not come. */
const KEPT_MAX_AGE_MS = 60_000;

interface Kept {
  /** The row's staged name (a fresh UUID per claim): a row id alone could be a later row's. */
  staged: string;
  bytes: Buffer;
  /** The staged hard link's fstat at the claim; undefined for a copy the agent wrote itself. */
  linked: Pick<Stats, 'ino' | 'size' | 'mtimeMs' | 'ctimeMs'> | undefined;
  at: number;
}

export type ClaimedBytes = ReturnType<typeof createClaimedBytes>;

export function createClaimedBytes(maxBytes = KEPT_MAX_BYTES, maxAgeMs = KEPT_MAX_AGE_MS, depth: () => number = () => 1) {
  const kept = new Map<number, Kept>();
  let total = 0;

  function drop(rowId: number): Kept | undefined {
    const k = kept.get(rowId);
    if (k) {
      kept.delete(rowId);
      total -= k.bytes.length;
    }
    return k;
  }

  return {
    keep(rowId: number, staged: string, bytes: Buffer, linked: Kept['linked']): void {
      const now = performance.now();
      // Insertion order is age order: only the front can be stale.
      for (const [id, k] of kept) {
        if (now - k.at < maxAgeMs) break;
        drop(id);
      }
      if (total + bytes.length > maxBytes * depth()) return;
      kept.set(rowId, { staged, bytes, linked, at: now });
      total += bytes.length;
    },
    /** The claim's bytes for this row while its staged copy is still what the claim read; else undefined. */
    async take(rowId: number, stagedPath: string): Promise<Buffer | undefined> {
      const k = drop(rowId);
      if (!k || k.staged !== stagedPath) return undefined;
      if (!k.linked) return k.bytes;
      // Staging is under state_dir: looked at on the event loop (util/state-fs.ts).
      const st = statOrUndefined(stagedPath);
      const same = st && st.ino === k.linked.ino && st.size === k.linked.size && st.mtimeMs === k.linked.mtimeMs && st.ctimeMs === k.linked.ctimeMs;
      return same ? k.bytes : undefined;
    },
    forget(rowId: number): void {
      drop(rowId);
    },
    size: () => kept.size,
  };
}
