import { Readable } from 'node:stream';
import { AbortedError, AgentError } from '../errors.js';
import type { StreamedBody } from './types.js';
import { errorForException, type ErrorContext } from './error-mapping.js';
import type { TransportResponse } from './transport.js';
import { pacedChunks } from './body-limits.js';

// Answers handed to the caller as streams (face images, TTS audio) and error bodies read for
// their message: what http-core does with a response body besides buffering it.

/** The start of an error body, for the server's message; a broken one only loses the message. */
export async function readLimited(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      size += buf.length;
      if (size >= limit) break; // leaving the loop destroys the body: the socket is not reused
    }
  } catch {
    // The status is what matters; a broken error body only loses the server's message.
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/**
 * The transport's own body, handed over as it is (a face image is read with no stream between),
 * with whatever error destroys it (a cut connection, the deadline, the caller's signal) turned
 * into a typed error before the stream records it: undici and Node's stream machinery
 * all end a body through its destroy(), so this one instance's destroy types the error.
 */
function typedErrors(body: Readable, typed: (err: unknown) => Error): Readable {
  const destroy = body.destroy;
  body.destroy = function (this: Readable, err?: Error) {
    return destroy.call(this, err ? typed(err) : err);
  };
  return body;
}

/** TTS audio: pacedChunks between the transport's body and the reader. */
function pacedBody(res: TransportResponse, ctx: ErrorContext, timeoutMs: number, typed: (err: unknown) => Error): Readable {
  async function* relay(): AsyncGenerator<Buffer> {
    try {
      yield* pacedChunks(res.body, ctx, timeoutMs);
    } catch (err) {
      throw typed(err);
    }
  }
  const body = Readable.from(relay(), { objectMode: false });
  body.once('close', () => {
    // Destroyed before the relay started reading: the transport's body still holds the socket.
    // A destroyed unread body may emit an error: with no listener it is an uncaught exception.
    if (!res.body.destroyed) res.body.on('error', () => {}).destroy();
  });
  return body;
}

/**
 * A 2xx answer handed over as a stream. `detach` (the attempt's deadline and caller listener) is
 * released when the body closes; every error on the body is a typed one (AgentError).
 */
export function streamed(
  res: TransportResponse, ctx: ErrorContext, timeoutMs: number, caller: AbortSignal | undefined, detach: () => void,
  timedOut: () => boolean, paced: boolean,
): StreamedBody {
  const typed = (err: unknown): Error => {
    if (err instanceof AgentError) return err;
    if (caller?.aborted) return new AbortedError(`${ctx.operation}: cancelled`, { cause: caller.reason });
    return errorForException(ctx, err, timeoutMs, timedOut());
  };
  const body = paced ? pacedBody(res, ctx, timeoutMs, typed) : typedErrors(res.body, typed);
  body.once('close', detach);
  // A caller may cancel before it starts reading (a download still opening its temp file): the
  // error must then wait in the stream for that reader, not reach the process as an unhandled
  // 'error' event. Readers that iterate or pipe still get it.
  body.on('error', () => {});
  if (paced && caller) {
    // At once, even while nobody reads (a player between two chunks). The transport's own body
    // is destroyed by the attempt's cancel (once() listens to the caller until the body closes).
    const onAbort = () => body.destroy(typed(caller.reason));
    caller.addEventListener('abort', onAbort, { once: true });
    body.once('close', () => caller.removeEventListener('abort', onAbort));
  }
  const header = (name: string) => {
    const v = res.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const length = Number(header('content-length'));
  return {
    status: res.statusCode,
    contentType: header('content-type') ?? 'application/octet-stream',
    contentLength: Number.isFinite(length) && header('content-length') !== undefined ? length : undefined,
    headers: res.headers,
    body,
    cancel: async () => {
      if (body.destroyed) return;
      await new Promise<void>((resolve) => {
        body.once('close', () => resolve());
        body.destroy();
      });
    },
  };
}
