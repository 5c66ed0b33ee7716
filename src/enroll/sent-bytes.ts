// The bytes of faces created and not yet resolved, kept for the face cache: a face's id is known
// only from a later listing of the group (face-uploader.ts resolve), and without its bytes the
// resolve reads the staged copy again (an open, a read, a close on the thread pool and a sha256).
//
// Bounded in bytes, oldest dropped first: a resolve comes within a second and one batch
// (face-uploader.ts: 64 faces, up to 256 in a large group). Counted in faces (96) until r19: with
// a group of 10,000, whose batches are 256, 625 of a burst's 1,000 faces were read again
// (test/bench/enroll.mjs, BENCH_GROUP=10000). 8 MB holds the largest batch of ~30 KB images, and
// faces of 1 MB (IN_MEMORY_MAX) hold 8 MB, where 96 of them held 96.

/** Bytes kept at most. */
export const SENT_KEPT_BYTES = 8 * 1024 * 1024;

export type SentBytes = ReturnType<typeof createSentBytes>;

export function createSentBytes(maxBytes = SENT_KEPT_BYTES) {
  // Insertion order is age order (a face kept again moves to the back).
  const kept = new Map<number, Buffer>();
  let total = 0;

  function take(rowId: number): Buffer | undefined {
    const bytes = kept.get(rowId);
    if (bytes) {
      kept.delete(rowId);
      total -= bytes.length;
    }
    return bytes;
  }

  return {
    /** Keeps what a created face sent; the oldest go while over the budget (never the newest). */
    keep(rowId: number, bytes: Buffer): void {
      take(rowId);
      kept.set(rowId, bytes);
      total += bytes.length;
      for (const [id, b] of kept) {
        if (total <= maxBytes || id === rowId) break;
        kept.delete(id);
        total -= b.length;
      }
    },
    /** The bytes kept for this row, once; undefined when they were never kept or were dropped. */
    take,
    bytes: () => total,
  };
}
