// How far ahead of its uploads the outbox works, scaled by how long agent.db's WAL takes to sync.
//
// A face's way through the outbox crosses the WAL syncer (db/wal-sync.ts) several times: its
// claim's commit waits for the sync under way, and its "sending" record and its outcome each wait
// for a sync of their own, one sync at a time. So every stage moves at most its window of files
// per sync (four claims, twice upload_concurrency started uploads): plenty on a fast disk, the
// bottleneck on an SD card's tens of ms per flush, where both windows bound a burst. So the
// windows grow by one step per SYNC_STEP_MS of typical sync; a fast disk keeps depth 1.
//
// What a deeper pipeline costs: more face images' bytes kept between claim and upload (their
// budget grows with it: claimed-bytes.ts), and more rows marked "sending" ahead of the request
// slots, which after a crash are settled by one group listing like any unknown outcome.

/** A flush this long (ms) or longer adds a step of depth. */
const SYNC_STEP_MS = 6;
/** Past this the windows stop growing: with 50 ms flushes a burst is bound by them anyway. */
export const MAX_DEPTH = 8;

/** The factor the outbox's windows are multiplied by, for syncs of `syncMs` (1 when fast or unknown). */
export function pipelineDepth(syncMs: number): number {
  if (!(syncMs > 0)) return 1;
  return Math.min(MAX_DEPTH, 1 + Math.floor(syncMs / SYNC_STEP_MS));
}
