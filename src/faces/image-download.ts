import { closeSync, fdatasync, open, write } from 'node:fs';
import { rm } from 'node:fs/promises';
import { setMaxListeners } from 'node:events';
import type { Readable } from 'node:stream';
import type { ServiceClient } from '../client/types.js';
import {
  AbortedError, AgentError, BadRequestError, BadResponseError, NetworkError, NotFoundError, ServiceError, TimeoutError,
} from '../errors.js';
import { ImageTap, extensionFor } from './image-check.js';
import { readBatch } from './image-body.js';
import { downloadTempName } from './cache-files.js';
import type { DiskFloor, Reservation } from '../disk/disk-floor.js';
import type { RoomPool } from './room-pool.js';

// Downloads one face image straight to a temp file in the staging folder under the cache folder
// (same filesystem, so the commit is a rename), checking its bytes on the way. Memory per download
// is at most WRITE_BATCH: a usual face image is written with one open, one write and one close.

export interface ImageJob {
  faceId: string;
  /** A recheck: send the validators we have; unconditional when absent. */
  conditional?: { etag: string | null; lastModified: string | null };
  /** Hash of the cached image, to tell an unchanged body when the server sends no validators. */
  prevSha256?: string | null;
}

export type ImageOutcome =
  /** `checkedAt`: when the server gave these bytes, if not during this pass (a kept download). */
  | { kind: 'stored'; tmp: string; ext: string; sha256: string; bytes: number; etag: string | null; lastModified: string | null; checkedAt?: number; synced?: boolean }
  /** `notModified`: answered 304; else `received`: the body bytes that turned out the same as the cache's. */
  | { kind: 'unchanged'; etag: string | null; lastModified: string | null; checkedAt?: number; notModified?: boolean; received?: number }
  /** A problem with this face only (bad bytes, face gone): recorded, the sync goes on. */
  | { kind: 'bad'; error: AgentError };

export interface DownloadContext {
  client: ServiceClient;
  dir: string;
  maxBytes: number;
  signal: AbortSignal;
  /** Called before each image request (counts them). */
  onRequest: () => void;
  /** The free-space floor of state_dir: a download never writes into it. */
  disk?: DiskFloor;
  /** Room held from that floor for the whole pass (room-pool.ts); else each image asks the floor. */
  room?: RoomPool;
  /** fdatasync each temp file before closing it (a small pass: durability.ts). */
  syncEach?: boolean;
}

/** Retries of a body that broke off mid-way; failures before the body are the client's to retry. */
const BODY_ATTEMPTS = 2;

export async function downloadImage(ctx: DownloadContext, job: ImageJob): Promise<ImageOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await downloadOnce(ctx, job);
    } catch (err) {
      if (err instanceof BadResponseError || err instanceof NotFoundError || err instanceof BadRequestError) {
        return { kind: 'bad', error: err };
      }
      // An image that does not arrive within service.request_timeout (one that drips, or whose
      // server never answers) fails that face; the others go on and the pass commits.
      if (err instanceof TimeoutError && !ctx.signal.aborted) return { kind: 'bad', error: err };
      // Bytes that break HTTP itself (more than the Content-Length announced): the server's fault.
      if (err instanceof NetworkError && err.details.protocolError === true) {
        return bad(job.faceId, `the server broke HTTP while sending the image of face ${job.faceId} (more bytes than its Content-Length, or garbage); the face is left out of the cache until the server sends a valid answer`);
      }
      const retry = err instanceof NetworkError && err.details.midBody === true && attempt < BODY_ATTEMPTS && !ctx.signal.aborted;
      if (!retry) throw err;
    }
  }
}

async function downloadOnce(ctx: DownloadContext, job: ImageJob): Promise<ImageOutcome> {
  const { faceId } = job;
  ctx.onRequest();
  const res = await ctx.client.getFaceImage(faceId, {
    signal: ctx.signal,
    ...(job.conditional?.etag ? { ifNoneMatch: job.conditional.etag } : {}),
    ...(job.conditional?.lastModified && !job.conditional.etag ? { ifModifiedSince: job.conditional.lastModified } : {}),
  });
  if (res.notModified) {
    return { kind: 'unchanged', etag: job.conditional?.etag ?? null, lastModified: job.conditional?.lastModified ?? null, notModified: true };
  }
  const etag = res.etag ?? null;
  const lastModified = res.lastModified ?? null;
  const tap = new ImageTap(ctx.maxBytes, (n) => new BadResponseError(
    `the image of face ${faceId} is larger than ${ctx.maxBytes} bytes (${n} so far); it was not cached`,
    { operation: 'GET /faces/{face_id}/image', details: { face_id: faceId } },
  ));
  if (res.contentLength !== undefined && res.contentLength > ctx.maxBytes) {
    // Refused before a byte is read or any room is held: an announced 10 GB must not look like a full disk.
    await res.cancel().catch(() => {});
    return bad(faceId, `the image of face ${faceId} is announced as ${res.contentLength} bytes, larger than ${ctx.maxBytes}; it was not cached`);
  }
  let stored: { tmp: string; bytes: number };
  // Room for the announced size is held before the first byte (parallel downloads share the free
  // space); bytes beyond it, or of an answer with no length, are checked as they come.
  const disk = ctx.disk;
  const room = disk ? await (ctx.room ? ctx.room.reserve(res.contentLength ?? 0) : disk.reserve(res.contentLength ?? 0, 'face image downloads')).catch(async (err: unknown) => {
    await res.cancel().catch(() => {});
    throw err;
  }) : undefined;
  try {
    stored = await writeTemp(ctx.dir, faceId, res.body, tap, disk, room, ctx.syncEach === true);
  } catch (err) {
    await res.cancel().catch(() => {});
    throw classifyBodyError(err, faceId, ctx.dir, ctx.signal);
  } finally {
    room?.release();
  }
  if (res.contentLength !== undefined && stored.bytes !== res.contentLength) {
    await rm(stored.tmp, { force: true });
    return bad(faceId, `the image of face ${faceId} has ${stored.bytes} bytes where the server announced ${res.contentLength} (truncated)`);
  }
  const verdict = tap.verdict();
  if ('problem' in verdict) {
    await rm(stored.tmp, { force: true });
    return bad(faceId, `the server sent a bad image for face ${faceId}: ${verdict.problem} (Content-Type ${res.contentType || 'none'}); the face is left out of the cache until the server has a valid image`);
  }
  const sha256 = tap.sha256();
  if (job.prevSha256 && sha256 === job.prevSha256) {
    await rm(stored.tmp, { force: true });
    return { kind: 'unchanged', etag, lastModified, received: stored.bytes };
  }
  return { kind: 'stored', tmp: stored.tmp, ext: extensionFor(verdict.type), sha256, bytes: stored.bytes, etag, lastModified, ...(ctx.syncEach ? { synced: true } : {}) };
}

const WRITE_BATCH = 64 * 1024;

/**
 * Like fs-atomic's streamToTemp, with fewer system calls and allocations per file: the body is
 * read in batches of 64 KB (image-body.ts), the file is opened once the first batch (or the whole
 * image) is in, callback fs instead of a FileHandle, and in a large pass no fsync: the sync makes
 * the whole batch durable at once before any rename (durability.ts), then fsyncs the folder once
 * after the renames. The file's creation and writes stay on the thread pool, also for a small
 * image: see image-body.ts for why they are not made on the event loop.
 */
async function writeTemp(
  dir: string, faceId: string, source: Readable, tap: ImageTap, disk: DiskFloor | undefined, room: Reservation | undefined, sync: boolean,
): Promise<{ tmp: string; bytes: number }> {
  let tmp = '';
  let fd: number | undefined;
  let done = false;
  let closeError: unknown;
  const makeRoom = async (bytes: number) => {
    const beyond = bytes - (room?.left ?? 0);
    if (beyond > 0) await disk?.assertRoom(beyond, 'face image downloads');
  };
  try {
    let batch = await readBatch(source, tap, WRITE_BATCH);
    for (;;) {
      await makeRoom(batch.bytes);
      if (fd === undefined) ({ fd, tmp } = await openTemp(dir, faceId));
      let buf = batch.chunks.length === 1 ? batch.chunks[0]! : Buffer.concat(batch.chunks, batch.bytes);
      while (buf.length > 0) {
        const n = await new Promise<number>((resolve, reject) => write(fd!, buf, 0, buf.length, null, (err, written) => (err ? reject(err) : resolve(written))));
        room?.wrote(n);
        buf = buf.subarray(n);
      }
      if (batch.ended) break;
      batch = await readBatch(source, tap, WRITE_BATCH);
    }
    // On the open descriptor: a separate pass would open and close every file once more.
    if (sync) await new Promise<void>((resolve, reject) => fdatasync(fd!, (err) => (err ? reject(err) : resolve())));
    done = true;
  } finally {
    if (fd !== undefined) {
      // In place: closing a file just created (not truncated) writes nothing on ext4, and costs
      // a few µs here against a thread-pool trip's tens (util/state-fs.ts makes every call under
      // state_dir in place; only the creation and the writes above stay on the pool).
      try {
        closeSync(fd);
      } catch (err) {
        closeError = err;
      }
    }
    if (!done && tmp) await rm(tmp, { force: true });
  }
  // Reached only when the writes succeeded (else their error is on its way out).
  if (closeError !== undefined) throw closeError;
  return { tmp, bytes: tap.bytes };
}

/** A new temp file (cache-files.ts downloadTempName) in the staging folder; a clash is retried with another name. */
async function openTemp(dir: string, faceId: string): Promise<{ fd: number; tmp: string }> {
  for (let attempt = 1; ; attempt++) {
    const tmp = `${dir}/${downloadTempName(faceId)}`;
    try {
      const fd = await new Promise<number>((resolve, reject) => open(tmp, 'wx', 0o644, (err, f) => (err ? reject(err) : resolve(f))));
      return { fd, tmp };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
    }
  }
}

function bad(faceId: string, message: string): ImageOutcome {
  return { kind: 'bad', error: new BadResponseError(message, { operation: 'GET /faces/{face_id}/image', details: { face_id: faceId } }) };
}

function classifyBodyError(err: unknown, faceId: string, dir: string, signal: AbortSignal): unknown {
  if (err instanceof AgentError) return err;
  if (signal.aborted) return new AbortedError(`download of the image of face ${faceId} stopped: the face sync is stopping`, { cause: err });
  const e = err as NodeJS.ErrnoException;
  if (e?.syscall && ['open', 'write', 'fsync', 'fdatasync', 'close', 'rename', 'mkdir'].includes(e.syscall)) {
    return new AgentError(`cannot write face images under ${dir}: ${e.message}; check free space and that state_dir is writable by the agent's user`, { cause: err, details: { path: dir } });
  }
  if (err instanceof ServiceError) return err;
  return new NetworkError(`the connection broke while receiving the image of face ${faceId}: ${(err as Error)?.message ?? String(err)}`, {
    cause: err, operation: 'GET /faces/{face_id}/image', details: { face_id: faceId, midBody: true },
  });
}

/**
 * Runs `fn` over `items` with at most `concurrency` at a time. The first thrown error stops new
 * work and aborts the running items (through the signal given to `fn`); the results that did
 * complete are returned with it so the caller can clean up what they left on disk.
 */
export async function runPool<T, R>(
  items: readonly T[], concurrency: number, signal: AbortSignal, fn: (item: T, signal: AbortSignal) => Promise<R>,
): Promise<{ results: (R | undefined)[]; error: unknown }> {
  const inner = new AbortController();
  // Each running item's HTTP call listens on the signal.
  setMaxListeners(concurrency * 4 + 10, inner.signal);
  const onAbort = () => inner.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  const results: (R | undefined)[] = new Array(items.length);
  let next = 0;
  let error: unknown;
  const worker = async () => {
    while (error === undefined && !inner.signal.aborted && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, inner.signal);
      } catch (err) {
        if (error === undefined) error = err;
        inner.abort(err);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  if (error === undefined && signal.aborted) error = new AbortedError('face sync stopped before all images were downloaded');
  return { results, error };
}
