import type { Socket } from 'node:net';
import type { RequestBody, StreamBody, TransportRequest } from './transport.js';
import { isFieldValue, isToken } from './http1-response.js';

// The request side of the client's HTTP/1.1 (direct-transport.ts): the head, checked as node:http
// checks it (a value with CR or LF would split the head and let a caller's input add headers), and
// the body, written as the transport's callers hand it over.

/** What node:http lets through in a path (its INVALID_PATH_REGEX, inverted). */
const REQUEST_PATH = /^[\x21-\xff]+$/;

/** The request line and header fields, checked as node:http checks them (a value with CR or LF would split the head). */
export function requestHead(base: URL, path: string, r: TransportRequest): string {
  if (!REQUEST_PATH.test(path)) throw Object.assign(new TypeError('Request path contains unescaped characters'), { code: 'ERR_UNESCAPED_CHARACTERS' });
  let head = `${r.method} ${path} HTTP/1.1\r\nhost: ${base.host}\r\n`;
  for (const name in r.headers) {
    const value = r.headers[name]!;
    if (!isToken(name)) throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), { code: 'ERR_INVALID_HTTP_TOKEN' });
    if (!isFieldValue(value)) throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), { code: 'ERR_INVALID_CHAR' });
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}

/**
 * Writes the head and the body: bytes (or pieces) in one corked write, a streamed body piece by
 * piece, waiting for the socket to drain. `sent` is called once all of it is with the kernel.
 */
export function send(socket: Socket, head: string, body: RequestBody | undefined, sent: () => void, fail: (err: Error) => void, over: () => boolean): void {
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body) || Array.isArray(body)) {
    const pieces: Array<string | Buffer> = body === undefined ? [] : typeof body === 'string' || Buffer.isBuffer(body) ? [body] : [...(body as readonly Buffer[])];
    socket.cork();
    socket.write(head, 'latin1', pieces.length === 0 ? sent : undefined);
    pieces.forEach((piece, i) => socket.write(piece, i === pieces.length - 1 ? sent : undefined));
    socket.uncork();
    return;
  }
  const stream = body as StreamBody;
  void (async () => {
    try {
      socket.write(head, 'latin1');
      // Each piece is written once the next is read, so that the last carries `sent`.
      let last: Buffer | undefined;
      for await (const chunk of stream.chunks()) {
        if (over()) return; // leaving the loop closes the source (its `finally`)
        if (last && !socket.write(last)) {
          await new Promise<void>((resolve) => {
            const done = () => { socket.off('drain', done); socket.off('close', done); resolve(); };
            socket.on('drain', done);
            socket.on('close', done);
          });
        }
        last = chunk;
      }
      if (over()) return;
      if (last) socket.write(last, sent);
      else sent();
    } catch (err) {
      fail(err as Error);
    }
  })();
}
