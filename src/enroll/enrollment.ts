import type { Stats } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { inTransaction } from '../db/database.js';
import type { BackoffPolicy } from '../util/backoff.js';
import { createSpeakerUploader, createVoiceprintUploader } from './audio-uploaders.js';
import { createClaimer } from './claim.js';
import { createFaceCheckStep } from './face-check-step.js';
import { createFaceChecker } from '../facecheck/index.js';
import { createClaimedBytes } from './claimed-bytes.js';
import { createCommitBatcher } from './commit-batcher.js';
import { createWalSyncer } from '../db/wal-sync.js';
import { createDirSync } from './dir-sync.js';
import { createDispatcher } from './dispatcher.js';
import { pipelineDepth } from './pipeline-depth.js';
import { createFaceUploader } from './face-uploader.js';
import { OUTCOME_UNKNOWN } from './failure.js';
import { createKnowledgeNotifier, createKnowledgeUploader, queueKnowledgeDeletions } from './knowledge-mirror.js';
import { classify, classifyNotAFile, createLayout, ensureFolders } from './layout.js';
import { createOutboxStore } from './outbox-store.js';
import { createPlacer, finalizeRow } from './results.js';
import { finalizeRows } from './result-batch.js';
import { createOutboxRetention } from './retention.js';
import { createStabilityTracker } from './stability.js';
import { createEnrollFs } from './enroll-fs.js';
import { EnrollPathError, createConfinedDirs } from './confined-dirs.js';
import { describeRefusal, isStoreRefusal } from './store-refusal.js';
import { outboxStatus, registerEnrollMetrics } from './status.js';
import type { Enrollment, EnrollmentDeps, EnrollmentStatus, Kind, OutboxRow } from './types.js';
import { createBatchQueue, createWorkQueue } from './work-queue.js';
import { createFolderWatcher } from './watcher.js';
import { quarantineUndecodable } from './undecodable.js';

const DEFAULT_RETRY: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000 };
const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;
/** Copies (claims) run a few at a time, times the pipeline's depth: disk-bound, and cheap. */
const CLAIM_CONCURRENCY = 4;
/** How long one read of the unfinished rows' paths serves the files a rescan offers. */
const ACTIVE_MEMO_MS = 200;
/**
 * Face claims wait while this many startable rows are queued for an upload slot: a burst is then
 * claimed about a budget of claimed-bytes.ts ahead of its uploads, which find the bytes the claim
 * read still in memory (claiming all of it at once, the uploads read and hashed their staged
 * copies again: four thread-pool round trips and a sha256 per file). Times the pipeline's depth.
 */
const CLAIM_AHEAD = 8;
/** Finished files whose results share one sync and one commit, at most. */
const FINALIZE_BATCH = 128;

export function createEnrollment(deps: EnrollmentDeps): Enrollment {
  const { config, db, client, logger } = deps;
  const settings = config.enroll;
  const layout = createLayout(settings.dir, config.state_dir);
  const store = createOutboxStore(db);
  const walSyncer = deps.walSyncer ?? createWalSyncer(db);
  const commit = createCommitBatcher(db, walSyncer);
  const placer = createPlacer(layout);
  const syncDir = createDirSync();
  // Where calls on enroll.dir's files are made: decided at each start (enroll-fs.ts).
  const fs = createEnrollFs();
  const retry = deps.retry ?? DEFAULT_RETRY;
  const requestTimeout = config.service?.request_timeout ?? DEFAULT_REQUEST_TIMEOUT_MS;
  // A request we lost sight of may still be processed after our deadline (a slow server, a queue
  // behind a proxy): the listing that settles it is made only this long after it was sent.
  const graceMs = 2 * requestTimeout;
  let running = false;
  let loopAc = new AbortController();
  let requestAc = new AbortController();
  let loop: Promise<void> | undefined;

  // The claims, the claims ahead, the uploads started and the bytes kept for them all scale with
  // how slow agent.db's syncs are (pipeline-depth.ts): each stage moves its window per sync.
  const depth = () => pipelineDepth(walSyncer.typicalMs());
  const claimed = createClaimedBytes(undefined, undefined, depth);
  const faces = createFaceUploader({ client, store, commit, settings, logger, abs: layout.abs, onFaceChanged: deps.onFaceChanged, claimed });
  const speakers = createSpeakerUploader({ client, store, commit, db, config });
  const notifier = createKnowledgeNotifier({ client, store, db, debounceMs: settings.knowledge_debounce, retry, logger });
  const ownChecker = !deps.faceChecker && config.enroll.face_check.mode !== 'off' ? createFaceChecker() : undefined;
  const faceChecker = deps.faceChecker ?? ownChecker;
  const faceCheck = faceChecker && createFaceCheckStep(faceChecker, config.enroll.face_check);
  const claim = createClaimer({ layout, store, commit, config, place: placer.place, unplace: placer.unplace, syncDir, claimed, fs, dirs: createConfinedDirs(layout.root, () => fs.onLoop), ...(faceCheck ? { faceCheck } : {}) });
  const retention = createOutboxRetention({ db, staging: layout.staging, logger });

  // Files finishing together share their result files' sync and the commit that records them
  // (result-batch.ts); a knowledge entry, or a row recovered without its target, goes alone.
  // Rows as the dispatcher read them right after committing their outcome: not read again here.
  const finalRows = new Map<number, OutboxRow>();
  const finalizer = createBatchQueue<number>(FINALIZE_BATCH, async (ids) => {
    const rows = ids.map((id) => {
      const handed = finalRows.get(id);
      finalRows.delete(id);
      return handed ?? store.get(id);
    }).filter((r): r is OutboxRow => !!r && !r.finalized && (r.state === 'done' || r.state === 'failed'));
    const batched = rows.filter((r) => r.kind !== 'knowledge' && r.final_path);
    const failed = new Map<number, unknown>();
    await Promise.all(rows.filter((r) => !batched.includes(r)).map(async (row) => {
      try {
        publishFinal(row, await finalizeRow(layout, store, commit, placer, row, syncDir, fs));
      } catch (err) {
        failed.set(row.id, err);
      }
    }));
    if (batched.length > 0) {
      const done = await finalizeRows({ layout, store, commit, placer, syncDir, logger, fs }, batched);
      // Announced once the result file is there to be read.
      for (const f of done.finished) publishFinal(f.row, f.resultFile);
      if (done.finished.length > 0) refusedFolders.clear();
      for (const [id, err] of done.failed) failed.set(id, err);
    }
    return failed;
  }, (err, id) => {
    if (err instanceof EnrollPathError) folderRefused(err);
    else logger.warn({ err, id }, 'cannot write the result files of an enrollment file; retrying at the next rescan');
  });

  /** Folders under enroll.dir found replaced (a link, another owner): said once each until results flow again. */
  const refusedFolders = new Set<string>();
  function folderRefused(err: EnrollPathError): void {
    if (refusedFolders.has(err.message)) return;
    refusedFolders.add(err.message);
    logger.warn({ code: err.code, path: err.details.path, err: err.message }, 'an enrollment folder was replaced: nothing is moved or written through it; results wait until it is a real folder again (retrying at each rescan)');
    deps.events?.publish('enroll.folder_refused', { code: err.code, path: err.details.path, reason: err.message });
  }

  function publishFinal(row: OutboxRow, resultFile: string): void {
    if (!deps.events) return;
    const base = { kind: row.kind, name: row.name, file: row.source_path, result_file: resultFile };
    if (row.state === 'failed') {
      deps.events.publish('enroll.failed', { ...base, code: row.last_error_code ?? 'TA_ERR_FAILURE', reason: row.last_error ?? 'failed' });
      return;
    }
    const result = row.result_json ? (JSON.parse(row.result_json) as Record<string, unknown>) : {};
    const ids: Record<string, unknown> = {};
    for (const k of ['face_id', 'voiceprint_id', 'speaker_id']) if (result[k] !== undefined) ids[k] = result[k];
    deps.events.publish('enroll.done', { ...base, ...ids });
  }

  const dispatcher = createDispatcher({
    commit, store, faces, concurrency: settings.upload_concurrency, depth, retry, graceMs, logger, resolveWaitMs: deps.resolveWaitMs,
    handlers: { faces, speakers, voiceprints: createVoiceprintUploader({ client, store, commit, db, config }), knowledge: createKnowledgeUploader({ client, store, commit }) },
    poll: (row, signal) => speakers.poll(row, signal),
    place: placer.place,
    unplace: placer.unplace,
    onFinal(row) {
      metrics.finished(row.kind, row.state === 'done' ? 'done' : 'failed');
      if (row.state === 'failed') logger.warn({ kind: row.kind, name: row.name, file: row.source_path, code: row.last_error_code, err: row.last_error }, 'enrollment file failed');
      else logger.info({ kind: row.kind, name: row.name, file: row.source_path }, 'enrollment file done');
      if (row.kind === 'knowledge' && row.state === 'done') notifier.poke();
      if (!finalizer.has(row.id)) finalRows.set(row.id, row);
      finalizer.push(row.id);
    },
    onAttempt: (kind, outcome, seconds) => metrics.attempt(kind, outcome, seconds),
    onSending: (row) => deps.events?.publish('enroll.started', { kind: row.kind, name: row.name, file: row.source_path, attempt: row.attempts + 1 }),
  });

  /** Entries a listing showed are not regular files (watcher.ts), until they are claimed. */
  const notFiles = new Set<string>();
  const candidateOf = (rel: string) => classify(rel) ?? (notFiles.has(rel) ? classifyNotAFile(rel) : undefined);

  /** The tracker's last look at a settled file (stability.ts), for its claim: one lstat less per file. */
  const settledLooks = new Map<string, Stats>();
  const claimer = createWorkQueue<string>(() => CLAIM_CONCURRENCY * depth(), async (rel) => {
    const look = settledLooks.get(rel);
    settledLooks.delete(rel);
    const c = candidateOf(rel);
    if (!c) return;
    if (c.kind === 'faces') await dispatcher.whenReadyBelow(CLAIM_AHEAD * depth());
    const r = await claim(c, look);
    if (r.outcome !== 'retry') notFiles.delete(rel);
    if (r.outcome === 'queued') {
      deps.events?.publish('enroll.queued', { kind: c.kind, name: r.name, file: c.rel });
      dispatcher.queued();
    }
    else if (r.outcome === 'retry') tracker.touch(rel);
    else if (r.outcome === 'failed' || r.outcome === 'duplicate') {
      const row = store.get(r.rowId);
      if (row) settledAtClaim(row, r.outcome);
    }
  }, (err, rel) => logger.warn({ err, file: rel }, `cannot take an enrollment file${isStoreRefusal(err) ? `: agent.db refused it (${describeRefusal(err)})` : ''}; trying again at the next rescan`));

  function settledAtClaim(row: NonNullable<ReturnType<typeof store.get>>, how: 'failed' | 'duplicate'): void {
    metrics.finished(row.kind, how);
    if (how === 'failed') logger.warn({ kind: row.kind, file: row.source_path, code: row.last_error_code, err: row.last_error }, 'enrollment file refused');
    else logger.info({ kind: row.kind, file: row.source_path }, 'enrollment file already uploaded earlier: not sending it again');
    finalizer.push(row.id);
  }

  const tracker = createStabilityTracker({
    settleMs: settings.settle_time, abs: layout.abs, logger, fs,
    onStable: (rel, st) => {
      if (st) settledLooks.set(rel, st);
      claimer.push(rel);
    },
  });

  // A rescan offers every file of the inboxes, twice a second during a burst, most of them with a
  // row still on its way: one query lists those rows for all of them (a query per file was a
  // millisecond of CPU per file on a Pi budget). A stale answer costs nothing: a file seen as
  // active is offered again by the next scan, one seen as new is refused by the claim.
  let activeMemo: { at: number; set: Set<string> } | undefined;
  function activeSources(): Set<string> {
    const now = Date.now();
    if (!activeMemo || now - activeMemo.at >= ACTIVE_MEMO_MS) activeMemo = { at: now, set: store.activeSources() };
    return activeMemo.set;
  }

  let knowledgeScan: Promise<void> | undefined;
  const undecodableRuns = new Set<string>();
  const watcher = createFolderWatcher({
    layout, rescanMs: settings.rescan_interval, logger,
    burstScanMs: Math.max(100, Math.min(settings.rescan_interval, settings.settle_time / 2)),
    load: () => tracker.size() + claimer.size(),
    onCandidate(rel, notAFile, scanned, seen) {
      if (notAFile && classifyNotAFile(rel)) notFiles.add(rel);
      const c = candidateOf(rel);
      if (!c || tracker.has(rel) || claimer.has(rel)) return;
      if (c.kind !== 'knowledge' && (scanned ? activeSources().has(rel) : store.isActiveSource(rel))) return;
      tracker.touch(rel, seen);
    },
    onUndecodable(relDir) {
      if (undecodableRuns.has(relDir)) return;
      undecodableRuns.add(relDir);
      void quarantineUndecodable(layout, relDir, logger)
        .then((n) => { for (let i = 0; i < n; i++) metrics.finished(relDir.split('/')[0] as Kind, 'failed'); })
        .catch((err: unknown) => logger.warn({ err, dir: relDir }, 'cannot move files whose names are not UTF-8'))
        .finally(() => undecodableRuns.delete(relDir));
    },
    onKnowledgeScan() {
      retention.poke();
      knowledgeScan ??= queueKnowledgeDeletions(layout, store, db, settings.settle_time, loopAc.signal)
        .then((n) => { if (n > 0) dispatcher.wake(); }, (err: unknown) => logger.warn({ err }, 'knowledge deletion check failed'))
        .finally(() => { knowledgeScan = undefined; });
      // Rows whose result files could not be written: while the finalizer has work (a burst, two
      // scans a second), what it finishes is not read again here.
      if (finalizer.size() === 0) for (const row of store.unfinalized(100)) finalizer.push(row.id);
    },
  });

  function status(): EnrollmentStatus {
    const pausedUntil = dispatcher.pausedUntil();
    return {
      dir: settings.dir,
      running,
      settling: tracker.size() + claimer.size(),
      ...outboxStatus(store),
      paused_until: pausedUntil ? new Date(pausedUntil).toISOString() : null,
      last_service_error: dispatcher.lastServiceError(),
    };
  }
  const metrics = registerEnrollMetrics(deps.metrics, status, { syncMs: () => walSyncer.typicalMs(), depth });

  /** Settles what a crash (or kill -9) left half-done, before anything new starts. */
  async function recover(): Promise<void> {
    const keep = store.stagedPaths();
    for (const f of await readdir(layout.staging)) {
      const p = join(layout.staging, f);
      if (!keep.has(p)) await rm(p, { force: true });
    }
    inTransaction(db, () => {
      for (const row of store.byState('sending')) {
        if (row.kind === 'faces' && row.action === 'create') {
          store.setState(row.id, 'unknown', { nextAttemptAt: (row.started_at ?? 0) + graceMs });
        } else if (row.kind === 'voiceprints' || row.kind === 'speakers') {
          store.setState(row.id, 'failed', {
            error: { message: `the agent stopped while ${row.source_path} was being sent; the service may or may not have registered it and offers no way to check: look with the service before dropping the file again`, code: OUTCOME_UNKNOWN },
          });
        } else {
          store.setState(row.id, 'queued');
        }
      }
    });
    for (const row of store.unfinalized(1_000_000)) {
      placer.reserve(row);
      finalizer.push(row.id);
    }
  }

  return {
    async start() {
      if (running) return;
      await ensureFolders(layout);
      const sameFs = await fs.decide(layout, layout.staging);
      await recover();
      loopAc = new AbortController();
      requestAc = new AbortController();
      running = true;
      notifier.start();
      loop = dispatcher.run(loopAc.signal, requestAc.signal);
      tracker.start();
      await watcher.start();
      logger.info({ dir: settings.dir, on_state_dir_fs: sameFs }, sameFs
        ? 'enrollment folders watched'
        : 'enrollment folders watched; they are not all on the file system of state_dir (a USB stick or a share?): calls on their files go through the thread pool');
    },
    async stop() {
      if (!running) return;
      running = false;
      await watcher.stop();
      tracker.stop();
      loopAc.abort();
      // Uploads in flight get the request timeout to finish; what is cut off is settled at the next start.
      const cut = setTimeout(() => requestAc.abort(), requestTimeout);
      await loop;
      clearTimeout(cut);
      requestAc.abort();
      await claimer.idle();
      await ownChecker?.stop();
      await finalizer.idle();
      await knowledgeScan;
      await retention.idle();
      await notifier.stop();
      // The daemon closes the database right after stop(): nothing may still be waiting to commit.
      await commit.drain();
      // Before the database closes (SQLite then removes the WAL file); a later start opens it again.
      if (!deps.walSyncer) await walSyncer.close();
    },
    status,
  };
}
