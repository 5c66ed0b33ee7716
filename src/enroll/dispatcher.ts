import { backoffDelay } from '../util/backoff.js';
import { classifyFailure, retryOutcome, stepError } from './failure.js';
import { describeRefusal, isStoreRefusal, writeUntilTaken } from './store-refusal.js';
import { parseMeta } from './outbox-store.js';
import type { DispatcherDeps, KindHandler, OutboxRow, StepOutcome } from './types.js';
import { NotSentError, createRequestSlots } from './send-gate.js';
import { createLoopWaiter } from './loop-waiter.js';
import { createReadyRows } from './ready-rows.js';
import { MAX_ROW_WAIT_MS, createOutboxPause, rescheduleAfterClockStep } from './outbox-clock.js';

// The outbox loop: starts uploads (upload_concurrency at most, one at a time per kind+name so that
// files for the same name keep their order), settles faces whose id or outcome is pending, follows
// speaker training, and records each step in one transaction. After a retryable failure it pauses
// every upload with backoff instead of letting a thousand queued files hammer a dead service.

/** Auth failures wait at least this long: the operator has to fix a credential first. */
const AUTH_PAUSE_MS = 30_000;
const IDLE_POLL_MS = 1_000;
/**
 * With no row waiting for anything (no queued, unknown, training or resolving row, no step in
 * flight), only wake() brings work: the loop sleeps this long instead of reading the outbox every
 * second after a burst. A backstop, not a schedule.
 */
const IDLE_EMPTY_MS = 60_000;
/** Faces waiting for their id wait at most this long for more to gather (face-uploader.ts resolveBatch). */
const RESOLVE_WAIT_MS = 1_000;
/**
 * Side steps (resolve, reconcile, training polls) are looked for at most this often: each look is
 * a summary query (and the due rows' reads when some are due), and passes run after every upload.
 * Their rows wait seconds anyway.
 */
const SIDE_CHECK_MS = 50;

export function createDispatcher(deps: DispatcherDeps) {
  const { store, logger } = deps;
  const resolveWaitMs = deps.resolveWaitMs ?? RESOLVE_WAIT_MS;
  const uploading = new Set<number>();
  /** Answered, outcome not yet committed: not to be started again meanwhile. */
  const finishing = new Set<number>();
  let side = 0; // resolve / reconcile / poll tasks in flight
  const paused = createOutboxPause();
  let pauseEpoch = 0;
  let failuresInRow = 0;
  let lastServiceError: string | null = null;
  const waiter = createLoopWaiter();
  let resolveDeferred = false;
  /** Rows waiting for their face id at the last side check. */
  let resolvingRows = 0;
  let lastSideCheck = -Infinity; // performance.now() ms, as the pause's (outbox-clock.ts says why)
  let sideThrottled = false;
  const tasks = new Set<Promise<void>>();
  // An upload's durable "sending" commit (an fsync, several ms on a busy disk) is made while the
  // slot's previous request is still on the wire: up to twice upload_concurrency uploads are
  // started (times the pipeline's depth when syncs are slow: pipeline-depth.ts), and the request
  // slots keep upload_concurrency requests at the service at most.
  // A row marked sending whose request never leaves (crash) is settled like any unknown outcome.
  const slots = createRequestSlots(deps.concurrency);
  const depth = deps.depth ?? (() => 1);
  const maxStarted = () => deps.concurrency * 2 * depth();
  let loopSignal: AbortSignal | undefined;
  const readyRows = createReadyRows(store); // startable rows read ahead; claims wait on them

  /** New rows, or rows changed outside this loop: the startable rows are read again. */
  function wake(): void {
    readyRows.markStale();
    waiter.wake();
  }

  function track(p: Promise<void>): void {
    tasks.add(p);
    void p.finally(() => {
      tasks.delete(p);
      waiter.wake();
    });
  }

  /**
   * Records a step; final rows are handed on for their result files. A change agent.db refuses is
   * made again, uploads paused meanwhile, until it is taken or the loop stops (store-refusal.ts):
   * resolves false then, the row left as it was for the next start.
   */
  async function apply(row: OutboxRow, o: StepOutcome): Promise<boolean> {
    const failed = o.state === 'failed';
    const final = o.state === 'done' || failed;
    // A final row as recorded, read back in the transaction that records it (a read on its own
    // takes and drops SQLite's locks, four fcntl calls).
    let fresh: OutboxRow | undefined;
    const recorded = await writeUntilTaken(async () => {
      // A final outcome is made durable, with the place its original goes, before the file moves.
      // The place is chosen before the transaction: its existence checks are calls on enroll.dir,
      // which would hold agent.db's write lock (and every job of the batch) while they run.
      const finalPath = final ? deps.place(row, failed) : null;
      try {
        await deps.commit(() => {
          store.setState(row.id, o.state, { nextAttemptAt: o.nextAttemptAt, meta: o.meta, result: o.result, finalPath, error: o.error ?? null });
          o.commit?.();
          if (final) fresh = store.get(row.id);
        }, { durable: final });
      } catch (err) {
        // Rolled back: the place is free again. Not after a failed WAL sync (the row may hold it).
        if (finalPath !== null && isStoreRefusal(err)) deps.unplace(row, finalPath, failed);
        throw err;
      }
    }, {
      retry: deps.retry,
      signal: loopSignal,
      onRefused(err, delayMs) {
        paused.extend(delayMs);
        logger.error({ err, file: row.source_path, step: o.state, retryInMs: delayMs },
          `agent.db refused to record the ${o.state} step of ${row.source_path} (${describeRefusal(err)}); trying again, uploads paused meanwhile`);
      },
    });
    if (!recorded) return false;
    readyRows.markStale();
    o.after?.();
    if (fresh) deps.onFinal(fresh);
    return true;
  }

  function pause(epoch: number, delayFloor: number): number {
    if (epoch === pauseEpoch) {
      paused.set(Math.max(backoffDelay(deps.retry, failuresInRow++), delayFloor));
      pauseEpoch++;
      readyRows.drop();
    }
    return paused.wallEnd();
  }

  async function fail(row: OutboxRow, err: unknown, epoch: number, handler: KindHandler): Promise<void> {
    const f = classifyFailure(err);
    const fresh = store.get(row.id) ?? row;
    if (!f.retryable) {
      // A face to update that was deleted meanwhile: decided again (create) from a fresh listing.
      const redo = row.kind === 'faces' && f.status === 404 && fresh.action === 'update';
      if (redo) deps.faces.forget(parseMeta(fresh).targetId ?? '');
      await apply(fresh, { state: redo ? 'queued' : 'failed', error: stepError(f) });
      return;
    }
    if (!isStoreRefusal(err)) lastServiceError = f.message;
    const until = pause(epoch, Math.max(f.retryAfterMs ?? 0, f.auth ? AUTH_PAUSE_MS : 0));
    if (f.auth) logger.error({ err }, 'the service refused the credentials; uploads wait until it accepts them');
    const decision = fresh.state === 'sending' && f.applied !== 'no' ? handler.ifUnknown(f.applied, fresh) : 'retry';
    await apply(fresh, retryOutcome(f, fresh, decision, until, deps.graceMs, Date.now()));
    logger.warn({ kind: row.kind, name: row.name, err: f.message, retryAt: new Date(until).toISOString() }, 'upload failed; will retry');
  }

  async function runUpload(row: OutboxRow, signal: AbortSignal): Promise<void> {
    const handler = deps.handlers[row.kind];
    const epoch = pauseEpoch;
    const t0 = performance.now();
    // A failure seen meanwhile paused uploads, or the agent is stopping: do not send.
    const gate = slots.gateFor(() => epoch !== pauseEpoch || signal.aborted || loopSignal?.aborted === true);
    try {
      deps.onSending?.(row);
      let outcome: StepOutcome;
      if (handler.gated) {
        outcome = await handler.upload(row, signal, gate);
      } else {
        const release = await gate();
        try {
          outcome = await handler.upload(row, signal, gate);
        } finally {
          release();
        }
      }
      if (signal.aborted) return;
      failuresInRow = 0;
      lastServiceError = null;
      // The slot is free as soon as the answer is in: the next upload's first commit can share a
      // transaction with this one's outcome instead of waiting for it.
      finishing.add(row.id);
      uploading.delete(row.id);
      wake();
      await apply(row, outcome);
      deps.onAttempt?.(row.kind, 'ok', (performance.now() - t0) / 1000);
    } catch (err) {
      // Never sent: back to the queue (its "sending" mark only said it might be).
      if (err instanceof NotSentError) {
        await apply(row, { state: 'queued', nextAttemptAt: paused.wallEnd() });
        return;
      }
      // Stopping: leave the row as it is; the next start settles it like after a crash.
      if (signal.aborted) return;
      await fail(row, err, epoch, handler);
      deps.onAttempt?.(row.kind, classifyFailure(err).retryable ? 'retry' : 'error', (performance.now() - t0) / 1000);
    }
  }

  /** A batch of face rows settled by one listing; a failed listing pauses like an upload. */
  async function runFaceBatch(rows: OutboxRow[], step: 'resolve' | 'reconcile'): Promise<void> {
    const epoch = pauseEpoch;
    try {
      const outcomes = await (step === 'resolve' ? deps.faces.resolve(rows) : deps.faces.reconcile(rows));
      // One transaction for the whole batch (the commit batcher groups these).
      await Promise.all(rows.map((row) => {
        const o = outcomes.get(row.id);
        return o ? apply(row, step === 'reconcile' && o.state === 'queued' ? { ...o, nextAttemptAt: 0 } : o) : undefined;
      }));
    } catch (err) {
      const f = classifyFailure(err);
      lastServiceError = f.message;
      const until = pause(epoch, f.retryAfterMs ?? 0);
      if (!f.retryable) logger.error({ err }, 'listing the group failed');
      if (step === 'reconcile') {
        await Promise.all(rows.map((row) => apply(row, { state: 'unknown', nextAttemptAt: until, error: stepError(f) })));
      }
    }
  }

  function pass(signal: AbortSignal): void {
    const now = Date.now();
    const mono = performance.now();
    sideThrottled = side === 0 && mono - lastSideCheck < SIDE_CHECK_MS;
    if (side === 0 && !sideThrottled) {
      lastSideCheck = mono;
      const summary = store.sideSummary();
      const waiting = summary.resolving ?? { n: 0, oldest: now };
      resolvingRows = waiting.n;
      const isDue = (state: 'unknown' | 'training') => (summary[state]?.due ?? Infinity) <= now;
      const unknown = isDue('unknown') ? store.due('unknown', now, 500) : [];
      const batches: [OutboxRow[], 'resolve' | 'reconcile'][] = [];
      // One listing per face is a lot of listings: let a few gather while uploads keep going
      // (counted, not read, until they go: this runs every pass).
      resolveDeferred = waiting.n > 0 && waiting.n < deps.faces.resolveBatch() && uploading.size > 0 && now - waiting.oldest < resolveWaitMs;
      if (waiting.n > 0 && !resolveDeferred) batches.push([store.byState('resolving'), 'resolve']);
      if (unknown.length && paused.leftAt(mono) <= 0) batches.push([unknown, 'reconcile']);
      for (const [rows, step] of batches) {
        side++;
        track(runFaceBatch(rows, step).finally(() => side--));
      }
      for (const row of isDue('training') ? store.due('training', now, 16) : []) {
        side++;
        track(deps.poll(row, signal).then(async (o) => { await apply(row, o); }, (err: unknown) => {
          if (!signal.aborted) logger.warn({ err, name: row.name }, 'speaker status poll failed');
        }).finally(() => side--));
      }
    }
    const most = maxStarted();
    if (paused.leftAt(mono) > 0 || uploading.size >= most) return;
    readyRows.refill(now, uploading, finishing);
    while (uploading.size < most && readyRows.size > 0) {
      const row = store.get(readyRows.take()!);
      if (!row) continue;
      uploading.add(row.id);
      track(runUpload(row, signal).finally(() => {
        uploading.delete(row.id);
        finishing.delete(row.id);
      }));
    }
    readyRows.notify();
  }

  return {
    wake,
    /** A claim queued a row: wakes the loop, and the row counts as waiting ahead (whenReadyBelow). */
    queued(): void {
      readyRows.queued();
      wake();
    },
    /**
     * Runs until `signal` aborts, then waits for the steps in flight; `requests` aborts those
     * (what is cut off mid-request is settled by the next start, as after a crash).
     */
    async run(signal: AbortSignal, requests: AbortSignal): Promise<void> {
      loopSignal = signal;
      readyRows.drop();
      readyRows.setRunning(true);
      const detach = waiter.attach(signal);
      while (!signal.aborted) {
        try {
          pass(requests);
        } catch (err) {
          logger.error({ err }, 'outbox pass failed');
        }
        // With every upload slot taken, the next wake-up is an upload finishing: the earliest due
        // time is not read (a query per pass, several passes per file in a burst). A row falling
        // due meanwhile waits for that wake-up, or IDLE_POLL_MS at most.
        let next = uploading.size >= maxStarted() ? null : store.nextDue();
        const now = Date.now();
        if (next !== null && next - now > MAX_ROW_WAIT_MS) next = await rescheduleAfterClockStep(deps, now, next, IDLE_POLL_MS, () => readyRows.markStale());
        const empty = next === null && uploading.size === 0 && tasks.size === 0 && resolvingRows === 0 && readyRows.size === 0;
        let delay = empty ? IDLE_EMPTY_MS : IDLE_POLL_MS;
        if (next !== null && next > now) delay = Math.min(delay, next - now);
        const pausedMs = paused.leftAt(performance.now());
        if (pausedMs > 0) delay = Math.min(delay, pausedMs);
        if (resolveDeferred) delay = Math.min(delay, resolveWaitMs);
        if (sideThrottled) delay = Math.min(delay, SIDE_CHECK_MS);
        // A timed wake-up: rows may have fallen due.
        if (await waiter.sleep(Math.max(5, delay))) readyRows.markStale();
      }
      detach();
      readyRows.setRunning(false);
      await Promise.allSettled([...tasks]);
    },
    /** Resolves once fewer than `below` startable rows wait for an upload slot (ready-rows.ts). */
    whenReadyBelow: (below: number): Promise<void> => readyRows.whenBelow(below),
    inFlight: () => uploading.size,
    pausedUntil: () => paused.wallEnd() || null,
    lastServiceError: () => lastServiceError,
  };
}
