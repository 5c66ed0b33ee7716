import type { Socket } from 'node:net';
import { WireRefusal, headEnd, parseHead, type RequestHead } from './wire-request.js';
import { ChunkedBody } from './chunked-body.js';

// One connection to the control socket: one request read whole (its head within the headers
// timeout, all of it within the request timeout), handed over, answered, and the connection
// closed (every answer says `Connection: close`: callers are CLI commands, curl and scripts, one
// call a connection; no keep-alive means no race with a client reusing a closing connection).
//
// A refused request (malformed, too large, too slow) is answered and the writing side closed,
// then the socket is read past for a short linger before it is destroyed: a client still sending
// would otherwise write into a closed socket and lose the answer (EPIPE over a unix socket, a
// reset over TCP; see src/util/http-client-error.ts, which does the same for node:http servers).
// The caller closing its end while its request is answered is a hang-up, as with node:http: the
// response's 'close' comes before its end, and the handler's work is aborted.

export interface WireRequest {
  method: string;
  url: string;
  version: RequestHead['version'];
  headers: Record<string, string>;
  body: Buffer;
}

export interface WireLimits {
  headMaxBytes: number;
  bodyMaxBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** How long a closed connection is read past before it is destroyed. */
  lingerMs: number;
}

export interface WireConnection {
  /** Nothing received yet: safe to close at once when stopping. */
  idle(): boolean;
}

export interface WireHandlers {
  request(req: WireRequest, res: WireResponse): void;
  /** The body of the answer to a refused request. */
  refusal(status: number, message: string): { contentType: string; text: string };
}

const REASONS: Record<number, string> = {
  100: 'Continue', 200: 'OK', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout',
  409: 'Conflict', 413: 'Content Too Large', 417: 'Expectation Failed', 431: 'Request Header Fields Too Large',
  500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout', 505: 'HTTP Version Not Supported',
};

/** A status line, Date, `Connection: close` and the given headers (any connection or date header given is replaced). */
export function responseHead(status: number, headers: Record<string, string | number>): string {
  let head = `HTTP/1.1 ${status} ${REASONS[status] ?? 'Unknown'}\r\nDate: ${new Date().toUTCString()}\r\nConnection: close\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (key === 'connection' || key === 'date') continue;
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}

/** What is read and dropped after a request (or a refusal) before the socket is no longer read. */
const DISCARD_MAX_BYTES = 64 * 1024;

export function serveConnection(socket: Socket, limits: WireLimits, handlers: WireHandlers): WireConnection {
  let phase: 'head' | 'body' | 'answering' | 'closing' = 'head';
  let head = '';
  let request: RequestHead | undefined;
  let chunked: ChunkedBody | undefined;
  const parts: Buffer[] = [];
  let received = 0;
  let discarded = 0;
  const deadline = performance.now() + limits.requestTimeoutMs;
  let timer: NodeJS.Timeout | undefined = setTimeout(
    () => refuse(new WireRefusal(408, `the request headers did not arrive within ${limits.headersTimeoutMs / 1000} s`)),
    limits.headersTimeoutMs,
  );

  const clear = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
  // Once the answer is handed to the kernel, the connection gets `lingerMs` to close from its end.
  const linger = () => socket.once('finish', () => {
    timer = setTimeout(() => socket.destroy(), limits.lingerMs);
    timer.unref();
  });

  function refuse(err: WireRefusal): void {
    if (phase === 'closing' || phase === 'answering' || socket.destroyed) return;
    clear();
    phase = 'closing';
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const { contentType, text } = handlers.refusal(err.status, err.message);
    socket.end(responseHead(err.status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) }) + text);
    linger();
  }

  function complete(body: Buffer): void {
    clear();
    phase = 'answering';
    const h = request!;
    const res = new WireResponse(socket, h.method === 'HEAD', () => {
      phase = 'closing';
      linger();
    });
    handlers.request({ method: h.method, url: h.url, version: h.version, headers: h.headers, body }, res);
  }

  function takeHead(chunk: Buffer): Buffer | undefined {
    const before = head.length;
    head += chunk.toString('latin1');
    const end = headEnd(head, before);
    if (end < 0 || end > limits.headMaxBytes) {
      if (head.length > limits.headMaxBytes) throw new WireRefusal(431, `the request head is larger than ${limits.headMaxBytes} bytes, the most the control socket takes`);
      return undefined;
    }
    request = parseHead(head, end);
    const expect = request.headers['expect'];
    if (expect !== undefined && expect.toLowerCase() !== '100-continue') throw new WireRefusal(417, `Expect: ${expect} is not supported; only 100-continue is`);
    const framing = request.body;
    if (framing.kind === 'length' && framing.length > limits.bodyMaxBytes) {
      throw new WireRefusal(413, `the request body is larger than ${limits.bodyMaxBytes} bytes, the most the control socket takes`);
    }
    // The rest of this read is the start of the body (latin1 is a byte a character).
    const rest = chunk.subarray(end - before);
    if (framing.kind !== 'none' && expect !== undefined && request.version === '1.1' && rest.length === 0) socket.write('HTTP/1.1 100 Continue\r\n\r\n');
    clear();
    timer = setTimeout(
      () => refuse(new WireRefusal(408, `the request did not arrive within ${limits.requestTimeoutMs / 1000} s`)),
      Math.max(0, deadline - performance.now()),
    );
    phase = 'body';
    if (framing.kind === 'chunked') chunked = new ChunkedBody(limits.bodyMaxBytes);
    return rest;
  }

  function take(chunk: Buffer): void {
    if (phase === 'answering' || phase === 'closing') {
      // Read past, to see the caller hang up; a client that keeps sending (pipelined requests,
      // or a flood) is no longer read past a bound, and stalls only itself.
      discarded += chunk.length;
      if (discarded > DISCARD_MAX_BYTES) socket.pause();
      return;
    }
    if (phase === 'head') {
      const rest = takeHead(chunk);
      if (rest === undefined) return;
      if (request!.body.kind === 'none') return complete(Buffer.alloc(0));
      chunk = rest;
    }
    if (phase !== 'body' || chunk.length === 0) return;
    if (chunked) {
      if (chunked.push(chunk)) complete(chunked.body());
      return;
    }
    const length = (request!.body as { length: number }).length;
    // Bytes past the body (a pipelined request) are not read: the answer closes the connection.
    const part = chunk.length > length - received ? chunk.subarray(0, length - received) : chunk;
    parts.push(part);
    received += part.length;
    discarded = chunk.length - part.length;
    if (received === length) complete(Buffer.concat(parts, received));
  }

  socket.on('data', (chunk: Buffer) => {
    try {
      take(chunk);
    } catch (err) {
      if (!(err instanceof WireRefusal)) throw err;
      refuse(err);
    }
  });
  socket.on('end', () => {
    // A request cut short is answered if the client still reads; a caller gone mid-answer hung up.
    if (phase === 'head' && head === '') socket.destroy();
    else if (phase === 'head' || phase === 'body') refuse(new WireRefusal(400, 'the connection ended before the whole request came'));
    else socket.destroy();
  });
  // A reset or a broken pipe: nobody is left to answer.
  socket.on('error', () => socket.destroy());
  socket.on('close', clear);

  return {
    idle: () => phase === 'head' && head === '',
  };
}

/** The answer to one request: a head, then the body in one piece or (an event stream) as it comes. */
export class WireResponse {
  statusCode = 200;
  private head: string | undefined;
  private sent = false;
  private ended = false;

  constructor(readonly socket: Socket, private readonly noBody: boolean, private readonly onEnd: () => void) {}

  /** The head has gone out. */
  get headersSent(): boolean {
    return this.sent;
  }

  /** end() was called: the answer is whole, as far as this side goes. */
  get writableFinished(): boolean {
    return this.ended;
  }

  /** Bytes written and not yet taken by the kernel (a client that does not read). */
  get writableLength(): number {
    return this.socket.writableLength + (this.head?.length ?? 0);
  }

  writeHead(status: number, headers: Record<string, string | number>): this {
    if (this.sent || this.head !== undefined) throw new Error('the answer\'s head was written already');
    this.statusCode = status;
    this.head = responseHead(status, headers);
    return this;
  }

  write(text: string): boolean {
    if (this.ended || this.socket.destroyed) return false;
    return this.socket.write(this.pending() + (this.noBody ? '' : text));
  }

  end(text = ''): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.sent && this.head === undefined) this.writeHead(this.statusCode, { 'Content-Length': this.noBody ? 0 : Buffer.byteLength(text) });
    if (this.socket.writable) this.socket.end(this.pending() + (this.noBody ? '' : text));
    this.onEnd();
  }

  destroy(): void {
    this.ended = true;
    this.socket.destroy();
  }

  /** 'close': the connection is gone, answered or not. */
  once(event: 'close', listener: () => void): this {
    this.socket.once(event, listener);
    return this;
  }

  private pending(): string {
    const head = this.head ?? '';
    this.head = undefined;
    this.sent = true;
    return head;
  }
}
