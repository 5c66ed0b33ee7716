import { describe, expect, it } from 'vitest';
import { headEnd, parseHead, WireRefusal } from '../../src/control/wire-request.js';
import { ChunkedBody } from '../../src/control/chunked-body.js';

// The control socket's request reader on input split as a socket can split it: a byte at a time,
// or a head and its body in one read. (The same over a real socket: control-wire.test.ts.)

/** headEnd called as the connection calls it, once per read, each read `step` bytes. */
function endInPieces(text: string, step: number): number {
  let seen = '';
  for (let at = 0; at < text.length; at += step) {
    const before = seen.length;
    seen += text.slice(at, at + step);
    const end = headEnd(seen, before);
    if (end >= 0) return end;
  }
  return -1;
}

describe('the request head', () => {
  const head = 'POST /say?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nX-Two: a\r\nx-two: b\r\nContent-Length: 3\r\n\r\n';

  it('ends at the same place whether it comes at once or a byte at a time, and its body may hold bare LFs', () => {
    const text = `${head}{\n}`;
    expect(headEnd(text)).toBe(head.length);
    expect(endInPieces(text, 1)).toBe(head.length);
    expect(endInPieces(text, 7)).toBe(head.length);
  });

  it('is read into method, target, version, lower-case headers (repeats joined) and its framing', () => {
    expect(parseHead(head, head.length)).toEqual({
      method: 'POST', url: '/say?x=1', version: '1.1',
      headers: { host: 'localhost', 'content-type': 'application/json', 'x-two': 'a, b', 'content-length': '3' },
      body: { kind: 'length', length: 3 },
    });
    const chunked = 'POST /say HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n';
    expect(parseHead(chunked, chunked.length).body).toEqual({ kind: 'chunked' });
  });

  it('a bare LF is refused as soon as it arrives, naming its line', () => {
    expect(() => endInPieces('GET / HTTP/1.1\r\nHost: x\nX', 1)).toThrow(new WireRefusal(400, 'line 2 of the request ends with LF alone; HTTP lines end with CRLF'));
  });
});

describe('a chunked body', () => {
  const wire = '5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-Field: x\r\n\r\n';

  it('decodes the same at once and a byte at a time, reading past extensions and trailers', () => {
    const whole = new ChunkedBody(1024);
    expect(whole.push(Buffer.from(wire))).toBe(true);
    expect(whole.body().toString()).toBe('hello world');
    const bytes = new ChunkedBody(1024);
    const done = [...Buffer.from(wire)].map((b) => bytes.push(Buffer.from([b])));
    expect(done.indexOf(true)).toBe(wire.length - 1);
    expect(bytes.body().toString()).toBe('hello world');
  });

  it('is refused once its chunks add up to more than the limit, before their data comes', () => {
    const body = new ChunkedBody(10);
    expect(body.push(Buffer.from('5\r\nhello\r\n'))).toBe(false);
    expect(() => body.push(Buffer.from('6\r\n'))).toThrow(/larger than 10 bytes/);
  });

  it('refuses an endless chunk line and a chunk size past 8 hex digits', () => {
    expect(() => new ChunkedBody(10).push(Buffer.from(`1;${'e'.repeat(2000)}`))).toThrow(/longer than 1024 bytes/);
    expect(() => new ChunkedBody(10).push(Buffer.from('100000000\r\n'))).toThrow(/not a hexadecimal number/);
  });
});
