import { closeSync, openSync, writeSync, writevSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { removeStateFile } from '../util/state-fs.js';
import { downloadTempName } from './cache-files.js';
import type { ImageTap } from './image-check.js';

// The body of an image answer read in batches, and a whole small image written in place. Both
// are on the path of every image of a sync (10,000 in a first sync of a large group).
// - Reading: event listeners, paused at each batch, instead of an async iterator (a promise, an
//   iterator result and a microtask turn per chunk).
// - Writing: an image that arrived whole in one batch (a usual face image: one batch of at most
//   64 KB) is created, written and closed on the event loop, like the seed pass's images
//   (util/state-fs.ts says why that is bounded: the face cache is under state_dir, no fsync
//   here). Three thread-pool trips cost the daemon ~40 µs of CPU each; the calls ~10 µs in all.

export interface Batch {
  chunks: Buffer[];
  bytes: number;
  /** The body ended with this batch. */
  ended: boolean;
}

/**
 * The next chunks of `body`, until `limit` bytes are in or it ends, each shown to `tap` (which may
 * throw: too large). The body is left paused between batches; on an error the caller destroys it.
 */
export function readBatch(body: Readable, tap: ImageTap, limit: number): Promise<Batch> {
  return new Promise<Batch>((resolve, reject) => {
    // Failed while the previous batch was being written (the transport's own listener kept it).
    if (body.errored) return reject(body.errored);
    if (body.destroyed) return reject(prematureClose());
    const batch: Batch = { chunks: [], bytes: 0, ended: false };
    const finish = (err?: unknown) => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      if (err === undefined) resolve(batch);
      else reject(err);
    };
    const onData = (chunk: Buffer) => {
      try {
        tap.observe(chunk);
      } catch (err) {
        body.pause();
        finish(err);
        return;
      }
      batch.chunks.push(chunk);
      batch.bytes += chunk.length;
      if (batch.bytes >= limit) {
        body.pause();
        finish();
      }
    };
    const onEnd = () => {
      batch.ended = true;
      finish();
    };
    const onError = (err: Error) => finish(err);
    // Destroyed without an error (cancelled): what an async iterator reports as a premature close.
    const onClose = () => finish(prematureClose());
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
    body.resume();
  });
}

function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/**
 * A new file (cache-files.ts downloadTempName, `wx`: a clash is retried with another name) in
 * `dir` holding `chunks`, written on the event loop; removed again when the write fails.
 */
export function writeNewFileSync(dir: string, faceId: string, chunks: readonly Buffer[]): string {
  for (let attempt = 1; ; attempt++) {
    const tmp = `${dir}/${downloadTempName(faceId)}`;
    let fd: number;
    try {
      fd = openSync(tmp, 'wx', 0o644);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
      continue;
    }
    try {
      writeAll(fd, chunks);
    } catch (err) {
      closeSync(fd);
      removeStateFile(tmp);
      throw err;
    }
    try {
      closeSync(fd);
    } catch (err) {
      removeStateFile(tmp);
      throw err;
    }
    return tmp;
  }
}

function writeAll(fd: number, chunks: readonly Buffer[]): void {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const n = chunks.length === 1 ? writeSync(fd, chunks[0]!) : writevSync(fd, chunks as Buffer[]);
  // A short write to a local file (a full disk is an error, not this): the rest in one piece.
  if (n < total) {
    let rest = Buffer.concat(chunks as Buffer[], total).subarray(n);
    while (rest.length > 0) rest = rest.subarray(writeSync(fd, rest));
  }
}
