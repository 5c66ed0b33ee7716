import { Readable } from 'node:stream';
import { ChunkedDecoder, type ChunkedFault } from '../util/chunked-decoder.js';

// An HTTP/1.1 response read from a connection's bytes as they come: the head (status line and
// header fields), then the body as its framing says (Content-Length, chunked, or to the close).
// Strict where a lenient reading would let a broken or hostile server confuse the agent: a head
// that is not HTTP, header names that are not tokens, folded lines, a head or a trailer over 16 KB,
// two differing lengths, a length beside chunked, a chunk size that is not hex: each an error whose
// code starts HPE_ as node's parser's do (error-mapping.ts reads them as "the answer breaks HTTP").

/** Node's default --max-http-header-size: the whole head (or trailer), line ends included. */
export const MAX_HEAD_BYTES = 16 * 1024;

/** Header fields a second copy of which is dropped, as node's IncomingMessage does. */
const SINGLE = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer',
  'retry-after', 'server', 'user-agent',
]);

/** RFC 9110 token characters (a header name), by char code. */
const TOKEN = (() => {
  const t = new Uint8Array(128);
  for (const c of "!#$%&'*+-.^_`|~") t[c.charCodeAt(0)] = 1;
  for (let c = 0x30; c <= 0x39; c++) t[c] = 1;
  for (let c = 0x41; c <= 0x5a; c++) t[c] = 1;
  for (let c = 0x61; c <= 0x7a; c++) t[c] = 1;
  return t;
})();

export class HttpParseError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = 'HttpParseError';
  }
}

export type Framing = { kind: 'length'; remaining: number } | { kind: 'chunked' } | { kind: 'close' } | { kind: 'none' };

export interface ResponseHead {
  statusCode: number;
  headers: Record<string, string | string[]>;
  framing: Framing;
  /** The connection may carry another request once this answer is read (HTTP/1.1, no `close`). */
  keepAlive: boolean;
}

/** A header name: an RFC 9110 token (node:http's own test for the names it writes, too). */
export function isToken(name: string): boolean {
  if (name === '') return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c > 127 || !TOKEN[c]) return false;
  }
  return true;
}

/**
 * A header value: no control character but tab (RFC 9110 5.5), and nothing past latin1, which is
 * how heads are read and written (node:http's checkInvalidHeaderChar for the values it writes).
 */
export function isFieldValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || c > 0xff) return false;
  }
  return true;
}

/** Header fields as lines `name: value`, into node's shape (lower-case names, duplicates joined). */
function parseFields(lines: string[], from: number): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (let i = from; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!isToken(name)) {
      const folded = line.startsWith(' ') || line.startsWith('\t');
      throw new HttpParseError('HPE_INVALID_HEADER_TOKEN', folded ? 'a folded header line' : `invalid header line ${JSON.stringify(line.slice(0, 40))}`);
    }
    const value = line.slice(colon + 1).trim();
    if (!isFieldValue(value)) throw new HttpParseError('HPE_INVALID_HEADER_TOKEN', `invalid character in the value of ${name}`);
    const key = name.toLowerCase();
    const had = headers[key];
    if (had === undefined) headers[key] = key === 'set-cookie' ? [value] : value;
    else if (key === 'content-length') {
      if (had !== value) throw new HttpParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'two different Content-Length values');
    } else if (Array.isArray(had)) had.push(value);
    else if (!SINGLE.has(key)) headers[key] = `${had}, ${value}`;
  }
  return headers;
}

function hasToken(value: string | string[] | undefined, token: string): boolean {
  if (value === undefined) return false;
  return String(value).toLowerCase().split(',').some((t) => t.trim() === token);
}

/**
 * The head in `text` (latin1, up to but not including the blank line), for a request made with
 * `method`. Interim answers (1xx) are returned too: the caller reads the next head after them.
 */
export function parseHead(text: string, method: string): ResponseHead {
  const lines = text.split('\r\n');
  const status = lines[0]!;
  const version = status.slice(0, 9);
  const code = status.slice(9, 12);
  if ((version !== 'HTTP/1.1 ' && version !== 'HTTP/1.0 ') || !/^[1-9]\d\d$/.test(code) || (status.length > 12 && status[12] !== ' ')) {
    throw new HttpParseError('HPE_INVALID_CONSTANT', `not an HTTP/1.x status line: ${JSON.stringify(status.slice(0, 40))}`);
  }
  const statusCode = Number(code);
  const headers = parseFields(lines, 1);
  const te = headers['transfer-encoding'];
  const cl = headers['content-length'] as string | undefined;
  let framing: Framing;
  if (statusCode < 200 || statusCode === 204 || statusCode === 304 || method === 'HEAD') framing = { kind: 'none' };
  else if (te !== undefined) {
    if (cl !== undefined) throw new HttpParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'both Content-Length and Transfer-Encoding');
    const codings = String(te).toLowerCase().split(',').map((t) => t.trim());
    framing = codings.at(-1) === 'chunked' ? { kind: 'chunked' } : { kind: 'close' };
  } else if (cl !== undefined) {
    if (!/^\d{1,15}$/.test(cl)) throw new HttpParseError('HPE_INVALID_CONTENT_LENGTH', `invalid Content-Length ${JSON.stringify(cl.slice(0, 20))}`);
    framing = { kind: 'length', remaining: Number(cl) };
  } else framing = { kind: 'close' };
  const keepAlive = version === 'HTTP/1.1 ' && !hasToken(headers.connection, 'close') && framing.kind !== 'close';
  return { statusCode, headers, framing, keepAlive };
}

/** A chunk line or the trailer as long as a head may be; a chunk size up to 12 hex digits. */
const CHUNKED_LIMITS = { lineMaxBytes: MAX_HEAD_BYTES, trailerMaxBytes: MAX_HEAD_BYTES, sizeMaxDigits: 12 };

function chunkedError(f: ChunkedFault): HttpParseError {
  switch (f.kind) {
    case 'line-too-long': return new HttpParseError('HPE_HEADER_OVERFLOW', 'a chunk line or trailer longer than 16 KB');
    case 'bare-lf': return new HttpParseError('HPE_STRICT', 'a bare LF in a chunked body');
    case 'chunk-overrun': return new HttpParseError('HPE_STRICT', 'no CRLF after a chunk\'s data');
    case 'bad-size': return new HttpParseError('HPE_INVALID_CHUNK_SIZE', `invalid chunk size ${JSON.stringify(f.text)}`);
    case 'trailer-too-large': return new HttpParseError('HPE_HEADER_OVERFLOW', 'a trailer longer than 16 KB');
    // Not given a body limit (an answer's size is the caller's to bound, as it streams): never reported.
    case 'body-too-large': return new HttpParseError('HPE_USER', 'a chunked body over its limit');
  }
}

/**
 * The body's bytes out of a connection's chunks, by its framing. `feed` hands each piece of body
 * to `out` and returns how many bytes of `chunk` it used: fewer than its length only once the
 * body is over (what follows belongs to no answer the agent asked for).
 */
export class BodyReader {
  done: boolean;
  private remaining: number;
  private readonly chunks: ChunkedDecoder | undefined;

  constructor(private readonly framing: Framing) {
    this.done = framing.kind === 'none' || (framing.kind === 'length' && framing.remaining === 0);
    this.remaining = framing.kind === 'length' ? framing.remaining : 0;
    this.chunks = framing.kind === 'chunked' ? new ChunkedDecoder(CHUNKED_LIMITS, chunkedError) : undefined;
  }

  feed(chunk: Buffer, out: (piece: Buffer) => void): number {
    if (this.done) return 0;
    if (this.framing.kind === 'close') {
      out(chunk);
      return chunk.length;
    }
    if (this.framing.kind === 'length') {
      const n = Math.min(chunk.length, this.remaining);
      out(n === chunk.length ? chunk : chunk.subarray(0, n));
      this.remaining -= n;
      this.done = this.remaining === 0;
      return n;
    }
    const used = this.chunks!.feed(chunk, out);
    this.done = this.chunks!.done;
    return used;
  }

  /** The connection closed: a body read to the close is whole, any other is cut. */
  closed(): boolean {
    if (this.framing.kind === 'close') this.done = true;
    return this.done;
  }
}

/** An answer's body as a stream: pauses the connection when its reader falls behind. */
export class ResponseBody extends Readable {
  constructor(private readonly onRead: () => void, private readonly onDestroy: () => void) {
    super();
  }

  override _read(): void {
    this.onRead();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.onDestroy();
    callback(err);
  }
}
