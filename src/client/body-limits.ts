import type { Readable } from 'node:stream';
import { TimeoutError } from '../errors.js';
import type { ErrorContext } from './error-mapping.js';

// How much of an answer the agent reads, and how fast it must come: the limits that keep a broken
// or hostile service from holding memory or a sync forever (README "What it refuses").

/**
 * A buffered answer larger than this is refused (BadResponseError) after reading this much: a
 * listing of 200,000 faces is about 20 MB, and a Pi must not hold an endless answer in memory.
 */
export const MAX_BUFFERED_BYTES = 32 * 1024 * 1024;
/** A paced stream (TTS audio) must bring at least this much per request_timeout of waiting. */
export const PACE_MIN_BYTES = 16 * 1024;

/**
 * The chunks of a body a player consumes at its own speed (TTS audio to the speaker): no overall
 * deadline, since a long phrase plays for longer than any request timeout, but the service must
 * bring PACE_MIN_BYTES per `timeoutMs` spent waiting on the network. Time the consumer spends
 * playing (the generator suspended at `yield`) does not count. A body that drips a byte a second
 * fails after one timeout; a whole phrase takes at most (bytes / PACE_MIN_BYTES + 1) timeouts of
 * waiting.
 */
export async function* pacedChunks(body: Readable, ctx: ErrorContext, timeoutMs: number): AsyncGenerator<Buffer> {
  const it = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let waited = 0;
  let got = 0;
  for (;;) {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const budget = Math.max(1, timeoutMs - waited);
    const step = await Promise.race([
      it.next(),
      new Promise<'slow'>((resolve) => { timer = setTimeout(() => resolve('slow'), budget); }),
    ]).finally(() => clearTimeout(timer));
    if (step === 'slow') {
      const err = new TimeoutError(
        `${ctx.subject ? `${ctx.operation} (${ctx.subject})` : ctx.operation}: the answer is too slow: ${got} bytes in ${timeoutMs} ms of waiting, `
        + `less than the ${PACE_MIN_BYTES} bytes the agent needs per service.request_timeout`,
        { operation: ctx.operation, details: { operation: ctx.operation } },
      );
      body.destroy(err);
      throw err;
    }
    if (step.done) return;
    waited += performance.now() - started;
    got += step.value.length;
    if (got >= PACE_MIN_BYTES) {
      waited = 0;
      got = 0;
    }
    yield step.value;
  }
}

/**
 * The body's bytes, or undefined when it is longer than `limit` (reading stops there and the body
 * is destroyed: the connection is not reused). Read with 'data' events, not an async iterator or
 * stream.finished: on a small answer their promises and listeners cost more than the bytes.
 */
export function readCapped(body: Readable, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
    };
    body.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        settle(() => resolve(undefined));
        body.destroy();
        return;
      }
      chunks.push(chunk);
    });
    body.once('end', () => settle(() => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size))));
    body.once('error', (err) => settle(() => reject(err)));
    // Destroyed with no error (nothing else should, but a reader must never wait forever).
    body.once('close', () => settle(() => reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }))));
  });
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Text of an answer; bytes that are not UTF-8 become U+FFFD and are flagged, never thrown. */
export function decodeUtf8(raw: Buffer): { text: string; invalidUtf8: boolean } {
  try {
    return { text: strictUtf8.decode(raw), invalidUtf8: false };
  } catch {
    return { text: raw.toString('utf8'), invalidUtf8: true };
  }
}
