import type { Logger } from 'pino';
import type { FaceRecord, ServiceClient, SkippedRecord } from '../client/types.js';
import { commitTemp, fsyncDir } from '../util/fs-atomic.js';
import type { DiskFloor } from '../disk/disk-floor.js';
import type { CacheFiles, PreparedIndex } from './cache-files.js';
import { isValidFaceId } from './cache-files.js';
import type { FaceChanges, FaceStore } from './face-store.js';
import { createWriteback, makeDurable, syncfsPays } from './durability.js';
import { runPool, type ImageOutcome } from './image-download.js';
import { fetchImage, type FetchJob } from './image-fetch.js';
import { createRoomPool } from './room-pool.js';
import { pickOldest, roundCandidate, type RoundCandidate } from './recheck.js';
import { NO_RECHECK_COST, type RecheckCost } from './recheck-pacer.js';
import { decideRows } from './sync-decide.js';
import type { Staging } from './staging.js';
import type { FaceFailure } from './types.js';
import { makeDir } from '../util/make-dir.js';

// One sync pass, in three phases so that a failure anywhere before the commit leaves the previous
// cache exactly as it was:
//   1. list the group and plan (which images to fetch, which due re-checks to send now);
//   2. download into the staging folder `faces/.staging/` (a transport failure aborts the pass; what
//      was downloaded is kept there for the next pass, staging.ts; a bad image only marks its face);
//   3. commit: make the new images durable (the new index.json is written to a temp name
//      meanwhile), rename them into place, write the rows (and forget the kept downloads) in one
//      transaction, rename the index into place; the images the new index no longer names are
//      deleted later (face-sync.ts).

export interface SyncPassContext {
  client: ServiceClient;
  store: FaceStore;
  files: CacheFiles;
  staging: Staging;
  logger: Logger;
  nowMs: number;
  recheckMs: number;
  /** Re-checks of the round this pass may send (recheck-pacer.ts allowance). */
  recheckAllowance: number;
  /** Faces checked more recently than this, ms, are left for a later pass (recheck.ts recheckMinAge). */
  recheckMinAgeMs: number;
  /** uniform [0, 1): spreads first re-check times. */
  random: () => number;
  concurrency: number;
  maxImageBytes: number;
  signal: AbortSignal;
  /** Faces to re-fetch unconditionally (this agent changed them). */
  forced: ReadonlySet<string>;
  /** Rewrite index.json even if nothing changed (a previous index write failed). */
  forceIndex: boolean;
  onImageRequest: () => void;
  /** Images fetched so far in this pass (for live progress; called at most every few hundred ms). */
  onProgress?(p: SyncProgress): void;
  disk?: DiskFloor | undefined;
}

export interface SyncProgress {
  phase: 'listing' | 'downloading' | 'committing';
  /** Faces the group lists (known once listed). */
  faces: number | null;
  images_done: number;
  images_total: number;
  bytes: number;
}

const PROGRESS_EVERY_MS = 250;

export interface SyncPassResult {
  added: number;
  updated: number;
  removed: number;
  failures: FaceFailure[];
  imageRequests: number;
  /** Downloads kept from a failed pass that this pass used instead of a request. */
  reused: number;
  /** Re-checks sent, and those due but left for later passes (the per-pass limit). */
  rechecks: number;
  rechecksDeferred: number;
  /** What the re-checks cost and how the service answered them (recheck-pacer.ts). */
  recheckCost?: RecheckCost;
  /** When each face whose image was asked for went out (monotonic ms, at the job's start). */
  askedAt?: ReadonlyMap<string, number>;
  indexWritten: boolean;
  /** Version of the index.json this pass wrote (cache-files.ts indexVersion); null when it wrote none. */
  indexVersion: string | null;
  /** Image files the new index no longer names: the caller deletes them (after a grace period). */
  obsolete: string[];
  /** Records of the listing left out because they are malformed. */
  skipped: SkippedRecord[];
  /** How long writing index.json took (a seed pass's: see face-sync.ts REFRESH_SPACING). */
  indexMs?: number;
}

export async function runSyncPass(ctx: SyncPassContext): Promise<SyncPassResult> {
  const t = { start: performance.now(), listed: 0, downloaded: 0, durable: 0, renamed: 0, committed: 0 };
  ctx.onProgress?.({ phase: 'listing', faces: null, images_done: 0, images_total: 0, bytes: 0 });
  const listed = await ctx.client.listFaces({ signal: ctx.signal });
  t.listed = performance.now();
  // The client skipped the malformed records (faces-api.ts parseFaceListing); the rest sync.
  const skipped = [...(listed.skipped ?? [])];
  const remote = new Map<string, FaceRecord>();
  listed.forEach((rec, index) => {
    if (typeof rec?.face_id !== 'string' || !isValidFaceId(rec.face_id)) skipped.push({ index, reason: 'face_id_not_32_hex' });
    else remote.set(rec.face_id, rec);
  });
  await ctx.store.loadRows();
  const rows = ctx.store.rowMap();
  // Downloads kept by a failed pass, for faces still listed; a face this agent changed is fetched anew.
  const staged = await ctx.staging.load((st) => remote.has(st.face_id) && !ctx.forced.has(st.face_id), (file) => ctx.store.isNamed(file));

  // Phase 1: plan.
  const jobs: FetchJob[] = [];
  const round: Array<FetchJob & RoundCandidate> = [];
  /** Jobs that ask again for a cached image (to count what re-checks cost). */
  const rechecks = new Set<FetchJob>();
  for (const [id, rec] of remote) {
    const prev = rows.get(id);
    const kept = staged.get(id);
    const validators = prev && { etag: prev.image_etag, lastModified: prev.image_last_modified };
    if (!prev || prev.image_file === null) jobs.push({ faceId: id, publish: true, ...(kept ? { staged: kept } : {}) });
    // This agent changed it: fetched at once, unconditionally.
    else if (ctx.forced.has(id)) jobs.push({ faceId: id, prevSha256: prev.image_sha256 });
    else if (kept) {
      // A re-check that a failed pass already answered with a new image: usually no request.
      jobs.push({ faceId: id, prevSha256: prev.image_sha256, conditional: validators!, staged: kept });
    } else if ((prev.id !== null && prev.id !== rec.id) || prev.name !== rec.name || prev.group_id !== rec.group_id) {
      // A new id (a service that re-creates the record when its image changes) or an edited record
      // may come with a new image: asked at once, outside the round. Conditionally all the same: a
      // service that renumbers a whole group costs its terminals a 304 a face, not the group again.
      const job = { faceId: id, prevSha256: prev.image_sha256, conditional: validators! };
      jobs.push(job);
      rechecks.add(job);
    } else {
      const place = roundCandidate(prev, ctx.nowMs, ctx.recheckMinAgeMs);
      if (place) round.push({ faceId: id, prevSha256: prev.image_sha256, conditional: validators!, ...place });
    }
  }
  const { picked, deferred } = pickOldest(round, ctx.recheckAllowance);
  for (const job of picked) {
    jobs.push(job);
    rechecks.add(job);
  }

  // Phase 2: download.
  if (jobs.length > 0) await makeDir(ctx.staging.dir);
  let imageRequests = 0;
  let reused = 0;
  // A small pass (the refreshes enrollment starts) syncs each image as it is written: cheaper
  // than a syncfs for a few files (durability.ts).
  const syncEach = !syncfsPays(jobs.length);
  const progress: SyncProgress = { phase: 'downloading', faces: remote.size, images_done: 0, images_total: jobs.length, bytes: 0 };
  let progressAt = 0;
  const report = (force: boolean) => {
    if (!ctx.onProgress || (!force && performance.now() - progressAt < PROGRESS_EVERY_MS)) return;
    progressAt = performance.now();
    ctx.onProgress({ ...progress });
  };
  report(true);
  const room = ctx.disk ? createRoomPool(ctx.disk, 'face image downloads') : undefined;
  const writeback = syncEach ? undefined : createWriteback(ctx.files.dir, ctx.signal, ctx.logger);
  const askedAt = new Map<string, number>();
  const fetchCtx = (signal: AbortSignal) => ({
    client: ctx.client, dir: ctx.staging.dir, cacheDir: ctx.files.dir, maxBytes: ctx.maxImageBytes, signal, staging: ctx.staging, logger: ctx.logger, syncEach,
    ...(ctx.disk ? { disk: ctx.disk } : {}), ...(room ? { room } : {}),
    nowMs: ctx.nowMs, recheckMs: ctx.recheckMs,
    onRequest: () => { imageRequests++; ctx.onImageRequest(); },
    onReuse: () => { reused++; },
  });
  const { results, error } = await runPool(jobs, ctx.concurrency, ctx.signal, async (job, signal) => {
    askedAt.set(job.faceId, performance.now());
    const o = await fetchImage(fetchCtx(signal), job);
    progress.images_done++;
    if (o.kind === 'stored') {
      progress.bytes += o.bytes;
      writeback?.wrote(o.bytes);
    }
    report(progress.images_done === progress.images_total);
    return o;
  });
  room?.close();
  await writeback?.settle();
  if (error !== undefined) {
    // Also when the disk floor stopped it (DiskFullError): the partial download was deleted as it
    // failed, the finished ones stay (above the floor) so that the next pass does not fetch them
    // again; a pass that re-downloaded everything up to the floor each retry would cost the
    // bandwidth and the SD card's wear for nothing.
    await keepDownloads(ctx);
    throw error;
  }
  t.downloaded = performance.now();
  const outcomes = new Map<string, ImageOutcome>();
  const recheckCost: RecheckCost = { ...NO_RECHECK_COST };
  jobs.forEach((job, i) => {
    const o = results[i]!;
    outcomes.set(job.faceId, o);
    if (rechecks.has(job)) tallyRecheck(recheckCost, o);
  });

  // Phase 3: decide the rows, then commit.
  const { upserts, deletes, obsolete, renames, unsynced, added, updated, removed, failures } = decideRows(remote, rows, outcomes, ctx);

  ctx.onProgress?.({ ...progress, phase: 'committing' });
  const clearStaging = ctx.staging.dirty();
  const changes: FaceChanges = { upserts, deletes, ...(clearStaging ? { also: () => ctx.staging.clearRows() } : {}) };
  const indexWritten = added + updated + removed > 0 || ctx.forceIndex;
  let index: PreparedIndex | undefined;
  try {
    // The images are made durable by another process (a syncfs) or the thread pool: the index the
    // commit will name is written meanwhile, so that after the commit it only has to be renamed.
    const [durable, prepared] = await Promise.allSettled([
      makeDurable(ctx.files.dir, unsynced, ctx.signal, ctx.logger),
      indexWritten ? ctx.files.prepareIndex(ctx.store.servedRowsAfter(changes)) : undefined,
    ]);
    if (prepared.status === 'fulfilled') index = prepared.value;
    if (durable.status === 'rejected') throw durable.reason;
    if (prepared.status === 'rejected') throw prepared.reason;
    t.durable = performance.now();
    // A rename that fails leaves already-renamed new images as strays (removed at start-up), the
    // rows, index and old images untouched, and the other downloads kept for the next pass.
    // Published downloads (image-fetch.ts) are in place already.
    const toRename = renames.filter(([tmp, file]) => tmp !== ctx.files.pathOf(file));
    const { error: renameError } = await runPool(toRename, 4, ctx.signal, async ([tmp, file]) => {
      await commitTemp(tmp, ctx.files.pathOf(file), false);
    });
    if (renameError !== undefined) throw renameError;
    // A syncfs made the folder's entries made before it durable too (the published downloads'):
    // only renames after it, or images made durable one by one, need the folder's fsync.
    if (toRename.length > 0 || (renames.length > 0 && durable.value !== 'syncfs')) await fsyncDir(ctx.files.dir);
    t.renamed = performance.now();
    await ctx.store.commit(changes);
  } catch (err) {
    if (index) await ctx.files.discardIndex(index);
    await keepDownloads(ctx);
    throw err;
  }
  t.committed = performance.now();
  let indexVersion: string | null = null;
  try {
    if (index) indexVersion = await ctx.files.publishIndex(index);
  } finally {
    if (clearStaging) await ctx.staging.cleared();
  }
  const ms = (a: number, b: number) => Math.round(b - a);
  ctx.logger.debug({
    list_ms: ms(t.start, t.listed), plan_download_ms: ms(t.listed, t.downloaded), durable_ms: ms(t.downloaded, t.durable),
    rename_ms: ms(t.durable, t.renamed), db_ms: ms(t.renamed, t.committed), index_ms: ms(t.committed, performance.now()), images: renames.length,
    kept_downloads_used: reused, rechecks: rechecks.size, rechecks_deferred: deferred, recheck_304: recheckCost.notModified, recheck_bytes: recheckCost.bytes,
  }, 'face sync phases');
  if (failures.length > 0) {
    ctx.logger.warn({ failed: failures.length, first: failures[0] }, `${failures.length} face image(s) could not be cached; the other faces were synced`);
  }
  return { added, updated, removed, failures, imageRequests, reused, rechecks: rechecks.size, rechecksDeferred: deferred, recheckCost, askedAt, indexWritten, indexVersion, obsolete, skipped };
}

function tallyRecheck(cost: RecheckCost, o: ImageOutcome): void {
  if (o.kind === 'bad') return;
  cost.sent++;
  if (o.kind === 'stored') cost.bytes += o.bytes;
  else if (o.notModified) cost.notModified++;
  else {
    cost.sameBody++;
    cost.bytes += o.received ?? 0;
  }
}

/**
 * The pass is failing: record its downloads so that the next pass (or a restarted agent) uses
 * them, and take those it published out of `faces/` (nothing names them).
 */
async function keepDownloads(ctx: SyncPassContext): Promise<void> {
  try {
    ctx.staging.flush();
    await ctx.staging.unpublish((file) => ctx.store.isNamed(file));
  } catch (err) {
    ctx.logger.warn({ err: (err as Error).message }, 'could not record the downloads of the failed face sync; the next sync downloads them again');
  }
}
