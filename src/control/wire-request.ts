// The request side of HTTP/1.1 (RFC 9112) as the control socket takes it: a request head read
// strictly, and a body framed by Content-Length or chunked. The control socket serves small JSON
// calls and an event stream to programs on the terminal, so what is refused here is refused with a
// reason (what, where) rather than read leniently: a bare LF, a folded or unnamed header line, a
// duplicate or non-numeric Content-Length, a Transfer-Encoding other than chunked, or both framings
// at once (the ambiguities request smuggling is made of), an HTTP/1.1 request without Host.

/** A request the server refuses before running it: the HTTP status and why, for the answer. */
export class WireRefusal extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export interface RequestHead {
  method: string;
  /** The request target as sent: origin-form (`/status?x=1`) or absolute-form. */
  url: string;
  version: '1.0' | '1.1';
  /** Lower-case names; a name sent more than once has its values joined with `, ` (as node:http does for most). */
  headers: Record<string, string>;
  /** How the body is framed: none, `length` bytes, or chunked. */
  body: { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' };
}

// tchar of RFC 9110 5.6.2, by character code.
const TOKEN = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TOKEN[c.charCodeAt(0)] = 1;

function isToken(text: string): boolean {
  if (text === '') return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 127 || !TOKEN[c]) return false;
  }
  return true;
}

/** Field values are visible characters, spaces, tabs and obs-text; no other control character. */
function isFieldValue(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return false;
  }
  return true;
}

/** A request target: visible ASCII only (no space, no control character, nothing above 0x7e). */
function isTarget(text: string): boolean {
  if (text === '') return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return text.startsWith('/') || text.startsWith('http://') || text.startsWith('https://');
}

/**
 * Where the head ends in `text` (latin1, a character per byte): the index just past its blank line,
 * or -1 while it is still arriving. `from` is how much of `text` an earlier call looked at, so a
 * head that comes a byte at a time is scanned once in all. Leading blank lines are skipped, as
 * RFC 9112 2.2 allows; a line ended by LF alone is refused at once rather than waited on.
 */
export function headEnd(text: string, from = 0): number {
  // At most 32 blank lines are skipped: more, and the request line is taken to be empty.
  let start = 0;
  while (start < 64 && text.startsWith('\r\n', start)) start += 2;
  const end = text.indexOf('\r\n\r\n', Math.max(start, from - 3));
  // Only the head's lines: a body that came in the same read may hold LFs of its own.
  const scanTo = end < 0 ? text.length : end;
  for (let at = text.indexOf('\n', from); at >= 0 && at < scanTo; at = text.indexOf('\n', at + 1)) {
    if (text.charCodeAt(at - 1) !== 0x0d) throw new WireRefusal(400, `line ${lineNumber(text, at)} of the request ends with LF alone; HTTP lines end with CRLF`);
  }
  return end < 0 ? -1 : end + 4;
}

function lineNumber(text: string, at: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < at; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The head in `text` up to `end` (from headEnd), read strictly. */
export function parseHead(text: string, end: number): RequestHead {
  const lines = text.slice(0, end - 4).split('\r\n');
  while (lines[0] === '') lines.shift();
  const requestLine = lines[0] ?? '';
  const parts = requestLine.split(' ');
  if (parts.length !== 3) throw new WireRefusal(400, 'the request line is not "METHOD /path HTTP/1.1" (three parts separated by single spaces)');
  const [method, url, protocol] = parts as [string, string, string];
  if (!isToken(method)) throw new WireRefusal(400, 'the request method is not a token');
  if (!isTarget(url)) throw new WireRefusal(400, 'the request target must be a path starting with / in visible ASCII');
  if (protocol !== 'HTTP/1.1' && protocol !== 'HTTP/1.0') {
    if (/^HTTP\/\d\.\d$/.test(protocol)) throw new WireRefusal(505, `${protocol} is not served here; send HTTP/1.1`);
    throw new WireRefusal(400, 'the request line does not end with HTTP/1.1');
  }
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  const seen = new Map<string, number>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith(' ') || line.startsWith('\t')) throw new WireRefusal(400, `header line ${i} is folded onto the one before (obsolete line folding is not accepted)`);
    const colon = line.indexOf(':');
    if (colon < 0) throw new WireRefusal(400, `header line ${i} has no ':'`);
    const name = line.slice(0, colon);
    if (!isToken(name)) throw new WireRefusal(400, `header line ${i} has no valid field name before its ':' (no space is allowed there)`);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (!isFieldValue(value)) throw new WireRefusal(400, `header ${name} holds a control character`);
    const key = name.toLowerCase();
    seen.set(key, (seen.get(key) ?? 0) + 1);
    headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
  }
  const version = protocol === 'HTTP/1.1' ? '1.1' : '1.0';
  if (version === '1.1' && !('host' in headers)) throw new WireRefusal(400, 'an HTTP/1.1 request must have a Host header (curl sends one; so must other clients)');
  return { method, url, version, headers, body: framing(headers, seen, version) };
}

function framing(headers: Record<string, string>, seen: Map<string, number>, version: '1.0' | '1.1'): RequestHead['body'] {
  const te = headers['transfer-encoding'];
  const cl = headers['content-length'];
  if (te !== undefined && cl !== undefined) throw new WireRefusal(400, 'the request has both Transfer-Encoding and Content-Length; send one');
  if (te !== undefined) {
    if (version === '1.0') throw new WireRefusal(400, 'Transfer-Encoding is not allowed in an HTTP/1.0 request');
    if (te.toLowerCase() !== 'chunked') throw new WireRefusal(400, `Transfer-Encoding ${te} is not accepted; send the body with Content-Length or Transfer-Encoding: chunked`);
    return { kind: 'chunked' };
  }
  if (cl === undefined) return { kind: 'none' };
  if ((seen.get('content-length') ?? 0) > 1 || !/^\d{1,15}$/.test(cl)) throw new WireRefusal(400, 'Content-Length must be one decimal number of bytes');
  const length = Number(cl);
  return length === 0 ? { kind: 'none' } : { kind: 'length', length };
}
