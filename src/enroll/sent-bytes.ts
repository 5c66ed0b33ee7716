// The bytes of faces created and not yet resolved, kept for the face cache: a face's id is known
// only from a later listing of the group (face-uploader.ts resolve), and without its bytes the
// resolve reads the staged copy again (an open, a read, a close on the thread pool and a sha256).
//
// Bounded in bytes, oldest dropped first: a resolve comes within a second and one batch
// (face-uploader.ts: 64 faces, up to 256 in a large group). 8 MB holds the largest batch of
// ~30 KB images, and bounds memory whatever the images' size.

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
