import { join } from 'node:path';
import { AbortedError, AgentError, AuthError, TimeoutError, describeError } from '../errors.js';
import { formatDuration } from '../util/units.js';
import { createDiskFloor } from '../disk/disk-floor.js';
import { faceSyncDeadlineMs } from './sync-deadline.js';
import { backoffDelay, wait, type BackoffPolicy } from '../util/backoff.js';
import { createCacheFiles, isValidFaceId } from './cache-files.js';
import { createFaceMetrics, type SyncResult } from './face-metrics.js';
import { createFaceStore } from './face-store.js';
import { createWalSyncer } from '../db/wal-sync.js';
import { createStaging, STAGING_DIR } from './staging.js';
import { runSyncPass, type SyncPassResult, type SyncProgress } from './sync-run.js';
import { combinePasses, runSeedPass, type FaceSeed } from './seed-pass.js';
import type { FaceSync, FaceSyncDeps, FaceSyncState, FaceSyncStatus, SyncErrorInfo, SyncReason, SyncReport } from './types.js';
import { NO_SKIPS, errorInfo, finishedReport, refusedReport, reportFromRun, reportSkipped, skippedFields } from './sync-report.js';
import { reconcileCache } from './cache-reconcile.js';
import { createRetiredFiles } from './retired-files.js';
import { createRefreshQueue } from './refresh-queue.js';
import { createRecheckPacer, type RecheckBudget } from './recheck-pacer.js';
import { recheckMinAge, timedPassDelay } from './recheck.js';
import { linkedSignal, withLinkedSignal } from '../util/linked-signal.js';

const MAX_WAIT_MS = 2 ** 31 - 1; // setTimeout's limit; longer waits are done in steps
const DEFAULT_MAX_IMAGE_BYTES = 32 * 1024 * 1024;
const DEFAULT_DELETE_GRACE_MS = 60_000;
const DEFAULT_RECHECK_REQUESTS_PER_MINUTE = 200;
const DEFAULT_RECHECK_BYTES_PER_HOUR = 64 * 1024 * 1024;

/**
 * Keeps `<state_dir>/faces/` and the faces table in step with GET /faces of the terminal's group.
 * One sync runs at a time; callers arriving meanwhile share it. A refused credential (401) parks
 * the loop until `reload()`: a fleet with a revoked secret must not hammer the service.
 */
export function createFaceSync(deps: FaceSyncDeps): FaceSync {
  const now = deps.now ?? Date.now;
  const log = deps.logger;
  let client = deps.client;
  let facesConfig = deps.config.faces;
  const walSyncer = deps.walSyncer ?? createWalSyncer(deps.db);
  const store = createFaceStore(deps.db, walSyncer);
  const files = createCacheFiles(join(deps.config.state_dir, 'faces'));
  const staging = createStaging({ db: deps.db, dir: join(files.dir, STAGING_DIR), logger: log, now, ...(deps.stagingMaxAgeMs !== undefined ? { maxAgeMs: deps.stagingMaxAgeMs } : {}) });
  const metrics = createFaceMetrics(deps.metrics, {
    consecutiveFailures: () => consecutiveFailures,
    intervalSeconds: () => facesConfig.sync_interval / 1000,
    credentialsRefused: () => authError !== undefined,
    oldestCheckAgeSeconds: () => {
      const s = store.recheckStats();
      return s.served > 0 && s.oldestCheckAt !== null ? Math.max(0, Math.round((now() - s.oldestCheckAt) / 1000)) : 0;
    },
  });
  const disk = deps.disk ?? createDiskFloor(deps.config.state_dir, deps.config.state_min_free ?? 'auto');
  const lifecycle = new AbortController();
  /** Faces this agent changed, to fetch unconditionally: face_id -> when asked (monotonic ms). */
  const forced = new Map<string, number>();
  /** Faces this agent uploaded, to put into the cache from the bytes it sent (seed-pass.ts). */
  let seeds = new Map<string, FaceSeed>();
  const pacer = createRecheckPacer();
  const budget = (): RecheckBudget => ({
    requestsPerMinute: facesConfig.recheck_requests_per_minute ?? DEFAULT_RECHECK_REQUESTS_PER_MINUTE,
    bytesPerHour: facesConfig.recheck_bytes_per_hour ?? DEFAULT_RECHECK_BYTES_PER_HOUR,
  });
  const retired = createRetiredFiles({ files, store, graceMs: deps.deleteGraceMs ?? DEFAULT_DELETE_GRACE_MS, now });

  let started = false;
  let stopped = false;
  let loop: Promise<void> | undefined;
  let wake = new AbortController();
  let running: Promise<SyncReport> | undefined;
  const refreshes = createRefreshQueue({ running: () => running, refresh: () => syncNow('refresh'), signal: lifecycle.signal });
  let authError: SyncErrorInfo | undefined;
  let consecutiveFailures = 0;
  // Until start() has compared index.json with the rows, assume it may be stale.
  let indexDirty = true;
  let nextSyncAt: number | null = null;
  let cachedCount = store.countServed();
  let lastReport: SyncReport | null = reportFromRun(store.lastRun());
  let lastSuccessAt: number | null = store.lastSuccessAt() ?? null;
  let lastError: (SyncErrorInfo & { at: string }) | null = null;
  let indexVer: string | null = null;
  metrics.cached(cachedCount);

  const backoff = (): BackoffPolicy => deps.backoff ?? { initialMs: 5_000, maxMs: Math.max(facesConfig.sync_interval, 30_000) };

  async function doSync(reason: SyncReason): Promise<SyncReport> {
    const startedAt = now();
    const t0 = performance.now();
    const forcedNow = new Set(forced.keys());
    const seedsNow = [...seeds.values()];
    seeds = new Map();
    let report: SyncReport;
    let result: SyncResult;
    const passExtra = { reused: 0, rechecks: 0, rechecksDeferred: 0, indexMs: 0 };
    const deadlineMs = deps.passDeadlineMs ?? faceSyncDeadlineMs(deps.config.service);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new TimeoutError(
      `face sync took longer than ${formatDuration(deadlineMs)} (10 x service.request_timeout x (retries + 1)) and was cut short; the images it finished are kept for the next sync`,
    )), deadlineMs);
    const passSignal = linkedSignal([lifecycle.signal, deadline.signal]);
    try {
      const passCtx = { store, files, logger: log, nowMs: startedAt, recheckAt: startedAt + facesConfig.sync_interval, maxImageBytes: deps.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES, signal: passSignal.signal, disk };
      const seeded = seedsNow.length > 0 ? await runSeedPass(passCtx, seedsNow) : undefined;
      const allowance = Math.min(deps.maxRechecksPerPass ?? Infinity, pacer.allowance(startedAt, budget(), facesConfig.sync_interval, store.recheckStats()));
      // Seeds alone need no listing; anything else (a forced face, a timed sync) gets a full pass.
      const pass: SyncPassResult = seeded && reason === 'refresh' && forcedNow.size === 0 ? seeded : combine(seeded, await runSyncPass({
        client, store, files, staging, logger: log, nowMs: startedAt, recheckMs: facesConfig.image_recheck_interval,
        // An operator's `faces sync` goes round whatever the budget allows now, however recently checked.
        recheckAllowance: allowance, recheckMinAgeMs: reason === 'manual' ? 0 : recheckMinAge(facesConfig.sync_interval), random: deps.random ?? Math.random,
        concurrency: Math.max(1, facesConfig.download_concurrency), maxImageBytes: deps.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
        signal: passSignal.signal, forced: forcedNow, disk, forceIndex: indexDirty, onImageRequest: () => metrics.imageRequest(),
        ...(deps.events ? { onProgress: (p: SyncProgress) => deps.events!.publish('faces.sync.progress', { reason, ...p }) } : {}),
      }));
      if (pass.indexVersion) indexVer = pass.indexVersion;
      if (pass.recheckCost) pacer.spend(startedAt, pass.recheckCost, pass.rechecksDeferred, budget(), facesConfig.sync_interval);
      // Done with a face once a request for it went out after it was asked for: an edited record
      // the pass asked about anyway (sync-run.ts) is not fetched again by the refresh that follows.
      for (const [id, at] of forced) {
        const asked = pass.askedAt?.get(id);
        if (asked !== undefined ? asked >= at : forcedNow.has(id) && at <= t0) forced.delete(id);
      }
      Object.assign(passExtra, { reused: pass.reused, rechecks: pass.rechecks, rechecksDeferred: pass.rechecksDeferred, indexMs: seeded?.indexMs ?? 0 });
      indexDirty = false;
      retired.add(pass.obsolete);
      await retired.removeDue();
      consecutiveFailures = 0;
      result = pass.failures.length > 0 ? 'partial' : 'ok';
      report = finishedReport(reason, startedAt, Math.round(performance.now() - t0), cachedCount, {
        ok: true, added: pass.added, updated: pass.updated, removed: pass.removed, failed: pass.failures.length,
        image_requests: pass.imageRequests, changed: pass.indexWritten, error: null, failures: pass.failures, ...skippedFields(pass.skipped),
      });
      reportSkipped(pass.skipped, log, metrics);
      lastSuccessAt = Date.parse(report.finished_at);
    } catch (thrown) {
      const err: unknown = deadline.signal.aborted && !lifecycle.signal.aborted ? deadline.signal.reason : thrown;
      // Anything may have failed after the rows were committed (the index write): rewrite it next time.
      indexDirty = true;
      const info = errorInfo(err);
      const aborted = err instanceof AbortedError || lifecycle.signal.aborted;
      if (!aborted) consecutiveFailures++;
      if (err instanceof AuthError) {
        authError = info;
        result = 'auth_error';
        log.error({ err_code: info.code, status: info.status }, info.message);
      } else {
        result = 'error';
        if (!aborted) log.warn({ err_code: info.code, status: info.status, failures: consecutiveFailures }, `face sync failed, the cache is unchanged: ${info.message}`);
      }
      report = finishedReport(reason, startedAt, Math.round(performance.now() - t0), cachedCount, {
        ok: false, added: 0, updated: 0, removed: 0, failed: 0, image_requests: 0, changed: false, error: info, failures: [], ...NO_SKIPS,
      });
      lastError = { ...info, at: report.finished_at };
      if (!aborted) deps.events?.publish('faces.sync.failed', { reason, code: info.code, message: info.message, consecutive_failures: consecutiveFailures });
    } finally {
      clearTimeout(timer);
      passSignal.dispose();
    }
    try {
      // A sync cut short by shutdown is not a failure worth showing after the restart.
      if (result !== 'error' || !lifecycle.signal.aborted) store.recordRun(report);
    } catch (err) {
      log.warn({ err: describeError(err) }, 'could not record the face sync in agent.db');
    }
    cachedCount = store.countServed();
    report.faces_cached = cachedCount;
    metrics.cached(cachedCount);
    metrics.syncDone(result, report.duration_ms / 1000);
    lastReport = report;
    if (reason === 'refresh') refreshes.ended(passExtra.indexMs);
    if (report.ok) {
      // Every successful sync is announced; a reader reloads index.json when index_version differs
      // from the one it has (unchanged when the sync changed nothing).
      deps.events?.publish('faces.synced', {
        reason, index_version: indexVer, index_file: files.indexPath, changed: report.changed, total: cachedCount,
        added: report.added, updated: report.updated, removed: report.removed, failed: report.failed,
      });
      const level = report.changed || report.failed > 0 ? 'info' : 'debug';
      log[level]({ reason, added: report.added, updated: report.updated, removed: report.removed, failed: report.failed, image_requests: report.image_requests, kept_downloads_used: passExtra.reused, rechecks: passExtra.rechecks, rechecks_deferred: passExtra.rechecksDeferred, duration_ms: report.duration_ms, ...(passExtra.indexMs > 0 ? { seed_index_ms: Math.round(passExtra.indexMs * 10) / 10 } : {}), faces_cached: cachedCount }, 'face sync done');
    }
    return report;
  }

  function syncNow(reason: SyncReason = 'manual'): Promise<SyncReport> {
    if (stopped) return Promise.resolve(refusedReport(reason, errorInfo(new AbortedError('face sync is stopped (the agent is shutting down)')), cachedCount, now()));
    if (authError) return Promise.resolve(refusedReport(reason, authError, cachedCount, now()));
    running ??= doSync(reason).finally(() => {
      running = undefined;
      // Until the next sync the rows are only needed by enrollment's refreshes, which read them
      // again if they come (face-store.ts), and keep them through a burst. Dropped right after a
      // sync, they go with the GCs V8 runs as its heap settles; dropped later, in an idle daemon,
      // no GC would come to free them.
      if (reason === 'refresh') return;
      try {
        store.release();
      } catch (err) {
        log.debug({ err: describeError(err) }, 'could not drop the face rows held in memory');
      }
    });
    return running;
  }

  function combine(first: SyncPassResult | undefined, second: SyncPassResult): SyncPassResult {
    return first ? combinePasses(first, second) : second;
  }

  /** Like refreshFace, from the bytes this agent uploaded instead of a download (seed-pass.ts). */
  function seedFace(seed: FaceSeed): Promise<SyncReport> {
    if (!isValidFaceId(seed.face.face_id)) return refreshFace(seed.face.face_id);
    seeds.set(seed.face.face_id, seed);
    return refreshes.later();
  }

  function refreshFace(faceId: string): Promise<SyncReport> {
    if (!isValidFaceId(faceId)) {
      return Promise.resolve(refusedReport('refresh', errorInfo(new AgentError(`cannot refresh face '${faceId}': a face_id is 32 hex characters`)), cachedCount, now()));
    }
    forced.set(faceId, performance.now());
    return refreshes.later();
  }

  async function waitOrWake(ms: number): Promise<'timeout' | 'woken' | 'stopped'> {
    await withLinkedSignal([lifecycle.signal, wake.signal], async (signal) => {
      for (let left = ms; left > 0; left -= MAX_WAIT_MS) {
        if (!(await wait(Math.min(left, MAX_WAIT_MS), signal))) break;
      }
    });
    if (lifecycle.signal.aborted) return 'stopped';
    if (wake.signal.aborted) {
      wake = new AbortController();
      return 'woken';
    }
    return 'timeout';
  }

  async function runLoop(): Promise<void> {
    let reason: SyncReason = 'start';
    if (deps.firstSyncAfter) {
      const after = deps.firstSyncAfter;
      await new Promise<void>((resolve) => {
        void after.then(resolve, resolve);
        lifecycle.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    while (!lifecycle.signal.aborted) {
      const report = await syncNow(reason);
      if (lifecycle.signal.aborted) break;
      let delay: number;
      if (authError) {
        nextSyncAt = null;
        delay = Number.POSITIVE_INFINITY;
      } else if (report.ok) {
        delay = timedPassDelay(facesConfig.sync_interval, deps.random ?? Math.random);
      } else {
        delay = backoffDelay(backoff(), consecutiveFailures - 1);
      }
      if (Number.isFinite(delay)) nextSyncAt = now() + delay;
      const outcome = await waitOrWake(delay);
      if (outcome === 'stopped') break;
      reason = outcome === 'woken' ? 'reload' : report.ok ? 'interval' : 'retry';
    }
    nextSyncAt = null;
  }

  return {
    async start() {
      if (started || stopped) return;
      started = true;
      indexVer = await reconcileCache({ store, files, staging, logger: log });
      indexDirty = false;
      cachedCount = store.countServed();
      metrics.cached(cachedCount);
      log.info({ faces_cached: cachedCount, index: files.indexPath, sync_interval_ms: facesConfig.sync_interval }, 'face cache ready');
      loop = runLoop().catch((err: unknown) => {
        log.error({ err: describeError(err) }, 'face sync loop stopped unexpectedly');
      });
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      lifecycle.abort();
      await loop;
      await running?.catch(() => {});
      if (!deps.walSyncer) await walSyncer.close();
    },
    syncNow,
    refreshFace,
    seedFace,
    reload(update) {
      if (update?.client) client = update.client;
      if (update?.faces) facesConfig = update.faces;
      if (authError) log.info('configuration reloaded: face sync resumes');
      authError = undefined;
      consecutiveFailures = 0;
      wake.abort();
    },
    status(): FaceSyncStatus {
      const state: FaceSyncState = stopped ? 'stopped' : running ? 'syncing' : authError ? 'auth_failed' : consecutiveFailures > 0 ? 'backoff' : 'idle';
      const { failures: _omit, ...last } = lastReport ?? { failures: [] };
      return {
        state,
        faces_cached: cachedCount,
        last_sync: lastReport ? (last as FaceSyncStatus['last_sync']) : null,
        last_success_at: lastSuccessAt === null ? null : new Date(lastSuccessAt).toISOString(),
        next_sync_at: nextSyncAt === null || authError ? null : new Date(nextSyncAt).toISOString(),
        consecutive_failures: consecutiveFailures,
        last_error: authError ? { ...authError, at: lastError?.at ?? null } : lastError,
        failed_faces: store.failedRows(20).map((r) => ({ face_id: r.face_id, name: r.name, code: r.error_code ?? 'TA_ERR_FAILURE', message: r.error ?? '' })),
        index_file: files.indexPath,
        index_version: indexVer,
        rechecks: pacer.status(now(), budget(), facesConfig.sync_interval, store.recheckStats()),
      };
    },
    listCached() {
      return store.cachedFaces();
    },
    cacheVersion() {
      return store.version();
    },
    cachedFace(faceId: string) {
      return store.cachedFace(faceId);
    },
  };
}
