import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { FaceCheckUnavailableError, InvalidInputError } from '../errors.js';
import type { CheckReply, CheckRequest, WorkerData } from './protocol.js';
import type { FaceMeasurements } from './types.js';

// The daemon's side of the face check: one worker thread (worker.ts), started at the first image
// so that an idle daemon never loads the runtime and the model, and ended after a quiet while so
// that its memory goes back to a small device between enrollment sessions.

/** The models as the package lays them out: <app>/models/face-detector beside <app>/dist. */
export const DEFAULT_MODEL_DIR = fileURLToPath(new URL('../../models/face-detector/', import.meta.url));

/**
 * Lowest detector scores taken as a face, chosen on test/fixtures/faces/ (README there): the near
 * pass (every image) scored no image without a face above 0.5; the far pass (measure.ts says when
 * it runs) saw the portraits at up to 0.97 and one non-face, the cat, at 0.75.
 */
export const NEAR_MIN_SCORE = 0.75;
export const FAR_MIN_SCORE = 0.8;

export interface FaceCheckerOptions {
  modelDir?: string;
  /** The worker's script: dist/facecheck/worker.js beside this file (tests give the built one). */
  workerUrl?: URL;
  /** The worker ends after this long with nothing to check. */
  idleMs?: number;
  /** One image taking longer than this means the worker is stuck: it is ended and the image's check fails. */
  timeoutMs?: number;
}

interface Pending {
  resolve(m: FaceMeasurements): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export type FaceChecker = ReturnType<typeof createFaceChecker>;

export function createFaceChecker(opts: FaceCheckerOptions = {}) {
  const modelDir = opts.modelDir ?? DEFAULT_MODEL_DIR;
  const workerUrl = opts.workerUrl ?? new URL('./worker.js', import.meta.url);
  const idleMs = opts.idleMs ?? 5 * 60_000;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const pending = new Map<number, Pending>();
  let worker: Worker | undefined;
  let nextId = 1;
  let idleTimer: NodeJS.Timeout | undefined;
  let starts = 0;

  function failAll(err: Error): void {
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    pending.clear();
  }

  function end(w: Worker, why: Error): void {
    if (worker === w) worker = undefined;
    failAll(why);
    void w.terminate();
  }

  function spawn(): Worker {
    const data: WorkerData = { modelDir, nearScore: NEAR_MIN_SCORE, farScore: FAR_MIN_SCORE };
    const w = new Worker(workerUrl, { workerData: data, stdout: true, stderr: true });
    starts++;
    // The runtime's own console lines are not the daemon's log.
    w.stdout.resume();
    w.stderr.resume();
    w.on('message', (replies: CheckReply[]) => {
      for (const reply of replies) {
        const p = pending.get(reply.id);
        if (!p) continue;
        pending.delete(reply.id);
        clearTimeout(p.timer);
        if ('measurements' in reply) p.resolve(reply.measurements);
        else if (reply.kind === 'undecodable') p.reject(new InvalidInputError(reply.error));
        else p.reject(new FaceCheckUnavailableError(reply.error));
      }
      settle(w);
    });
    w.on('error', (err) => end(w, new FaceCheckUnavailableError(`the face check's thread failed: ${err.message}`, { cause: err })));
    w.on('exit', (code) => {
      if (worker === w) worker = undefined;
      if (pending.size > 0) failAll(new FaceCheckUnavailableError(`the face check's thread ended (exit code ${code})`));
    });
    return w;
  }

  /** Idle: the worker no longer keeps the process alive, and ends after idleMs. */
  function settle(w: Worker): void {
    if (pending.size > 0 || worker !== w) return;
    w.unref();
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      if (worker === w && pending.size === 0) {
        worker = undefined;
        void w.terminate();
      }
    }, idleMs);
    idleTimer.unref();
  }

  return {
    /** Measures one image; rejects with InvalidInputError when it cannot be decoded, FaceCheckUnavailableError when the check cannot run. */
    check(bytes: Uint8Array): Promise<FaceMeasurements> {
      clearTimeout(idleTimer);
      worker ??= spawn();
      const w = worker;
      w.ref();
      const id = nextId++;
      return new Promise<FaceMeasurements>((resolve, reject) => {
        const timer = setTimeout(() => end(w, new FaceCheckUnavailableError(`the face check gave no answer in ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
        pending.set(id, { resolve, reject, timer });
        const req: CheckRequest = { id, bytes };
        w.postMessage(req);
      });
    },
    /** Whether the model is in memory now (a worker is running). */
    loaded: (): boolean => worker !== undefined,
    /** How many workers were started so far (each loads the model once). */
    starts: (): number => starts,
    modelDir,
    async stop(): Promise<void> {
      clearTimeout(idleTimer);
      const w = worker;
      worker = undefined;
      failAll(new FaceCheckUnavailableError('the face check was stopped'));
      if (w) await w.terminate();
    },
  };
}
