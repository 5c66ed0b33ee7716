import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Reply, ReplyBody } from './http.js';

// Writes a Reply, honouring backpressure, and is where body faults happen: a slow body, a body cut
// in the middle by a dropped connection, or a body truncated but ended cleanly.

export interface WriteOptions {
  cut?: 'drop-body' | 'truncate';
  slowBytesPerSec?: number;
  /** Called once the status is decided, before any byte leaves (the request log records it). */
  onStatus(status: number): void;
}

async function collect(body: ReplyBody): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  const parts: Buffer[] = [];
  for await (const c of body as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

function* slices(buf: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

/** Returns the body bytes written. Never throws: a client that went away just ends the write. */
export async function writeReply(res: ServerResponse, reply: Reply, opts: WriteOptions): Promise<number> {
  const headers: Record<string, string | number> = { ...(reply.headers ?? {}) };
  let body = reply.body;
  let limit = Infinity;
  if (opts.cut && body !== undefined) {
    const whole = await collect(body);
    body = whole;
    limit = Math.floor(whole.length / 2);
    if (opts.cut === 'truncate') {
      for (const k of Object.keys(headers)) if (k.toLowerCase() === 'content-length') delete headers[k];
      headers['Content-Length'] = limit;
    }
  }
  opts.onStatus(reply.status);
  res.writeHead(reply.status, headers);
  if (body === undefined || reply.status === 204 || reply.status === 304) {
    res.end();
    return 0;
  }
  const closed = new AbortController();
  res.once('close', () => closed.abort());
  const step = opts.slowBytesPerSec ? Math.max(1, Math.floor(opts.slowBytesPerSec / 20)) : 0;
  const source: Iterable<Buffer> | AsyncIterable<Buffer> = Buffer.isBuffer(body) ? slices(body, step || 64 * 1024) : (body as AsyncIterable<Buffer>);
  let sent = 0;
  try {
    for await (const raw of source) {
      let chunk = Buffer.from(raw);
      if (sent + chunk.length > limit) chunk = chunk.subarray(0, limit - sent);
      for (const piece of step ? slices(chunk, step) : [chunk]) {
        if (closed.signal.aborted) return sent;
        if (step) await sleep(Math.round((piece.length / opts.slowBytesPerSec!) * 1000), undefined, { signal: closed.signal });
        sent += piece.length;
        if (!res.write(piece)) await once(res, 'drain', { signal: closed.signal });
      }
      if (sent >= limit) break;
    }
  } catch {
    // The client went away, or the body's source failed: nothing more can be sent.
    if (body instanceof Readable) body.destroy();
    res.destroy();
    return sent;
  }
  if (body instanceof Readable && !body.readableEnded) body.destroy();
  if (opts.cut === 'drop-body') {
    // Let the half body leave, then cut the connection without ending the response.
    await new Promise<void>((resolve) => res.write('', () => resolve()));
    res.socket?.destroy();
    return sent;
  }
  res.end();
  return sent;
}
