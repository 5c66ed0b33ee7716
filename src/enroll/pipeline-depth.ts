// How far ahead of its uploads the outbox works, scaled by how long agent.db's WAL takes to sync.
//
// A face's way through the outbox crosses the WAL syncer (db/wal-sync.ts) several times: its
// claim's commit waits for the sync under way to end (the commit batcher holds back meanwhile),
// its "sending" record and its outcome each wait for a sync of their own, and the syncer runs one
// sync at a time. So every stage moves at most its window of files per sync: four claims (the
// claim concurrency), twice upload_concurrency started uploads. With this VM's 1 to 3 ms flushes
// that is far more than the wire takes; with an SD card's tens of ms it is the bottleneck. Under
// 20 ms flushes (test/bench/enroll.mjs, BENCH_SLOW_SYNC_MS=20) a burst of 1,000 files took 6.8 s
// against 1.6 s for the plain loop, about 4 files per sync, and widening either window alone
// changed nothing: both bound it.
//
// The windows grow with the sync's typical time instead: by one step per SYNC_STEP_MS. Measured,
// in turn with the fixed windows, on a loop-mounted ext4 (r49): 5 ms added to every flush (syncs
// of about 6 ms), depth 2: 3.04 s against 3.74 s; 20 ms, depth 4: 3.05 to 3.22 s against 6.8 s,
// depth 3 still 3.52 s. With no delay the syncs take 1 to 3 ms and the depth stays 1, the windows
// as they were, so nothing changes where the flush is fast.
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
