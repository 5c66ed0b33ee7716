import type { Readable } from 'node:stream';
import type { ImageTap } from './image-check.js';

// The body of an image answer read in batches of up to 64 KB (a usual face image: one batch), with
// event listeners, paused at each batch, instead of an async iterator (a promise, an iterator
// result and a microtask turn per chunk): this is on the path of every image of a sync.
// The file calls that follow stay on the thread pool: on the event loop, a write held by the
// kernel's dirty-page throttling on a slow SD card would stop every download, not one.

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
    // Ended between two batches: the previous one was filled by the body's last chunk, read when
    // its end was already in, so the stream emitted 'end' (and closed itself) with nobody listening.
    if (body.readableEnded) return resolve({ chunks: [], bytes: 0, ended: true });
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
