import { describe, expect, it } from 'vitest';
import { BodyReader, HttpParseError, parseHead } from '../../src/client/http1-response.js';

// The response reader on its own, where a socket cannot choose where its reads split: every split
// of a chunked body, and the framing each kind of head gives. Through real sockets, with the
// errors a user sees, in direct-transport.test.ts.

const read = (reader: BodyReader, pieces: Buffer[]): { body: string; used: number[] } => {
  const out: Buffer[] = [];
  const used = pieces.map((p) => reader.feed(p, (b) => out.push(Buffer.from(b))));
  return { body: Buffer.concat(out).toString('latin1'), used };
};

describe('chunked bodies', () => {
  const text = 'a\r\n0123456789\r\n3;ext="x;y"\r\nabc\r\n0\r\nx-sum: 9\r\n\r\n';

  it('decode the same at every split into two reads, and stop at their end', () => {
    for (let at = 0; at <= text.length; at++) {
      const reader = new BodyReader({ kind: 'chunked' });
      const bytes = Buffer.from(`${text}NEXT`, 'latin1');
      const { body, used } = read(reader, [bytes.subarray(0, at), bytes.subarray(at)]);
      expect(body).toBe('0123456789abc');
      expect(reader.done).toBe(true);
      // What follows the body is not taken: the connection is not used again.
      expect(used[0]! + used[1]!).toBe(text.length);
    }
  });

  it('decode byte by byte', () => {
    const reader = new BodyReader({ kind: 'chunked' });
    const bytes = Buffer.from(text, 'latin1');
    expect(read(reader, [...bytes].map((b) => Buffer.from([b]))).body).toBe('0123456789abc');
    expect(reader.done).toBe(true);
  });

  it.each([
    ['a size of 13 hex digits', '1000000000000\r\n'],
    ['a size with a sign', '-5\r\n'],
    ['a size with leading whitespace (llhttp refuses it too)', ' 3\r\nabc\r\n0\r\n\r\n'],
    ['an empty size line', '\r\n'],
    ['a bare LF after the size', '3\nabc\r\n0\r\n\r\n'],
    ['data longer than its size', '3\r\nabcd\r\n0\r\n\r\n'],
    ['a trailer over 16 KB', `0\r\n${'x-a: b\r\n'.repeat(2500)}\r\n`],
  ])('refuse %s', (_what, body) => {
    const reader = new BodyReader({ kind: 'chunked' });
    expect(() => read(reader, [Buffer.from(body, 'latin1')])).toThrow(HttpParseError);
  });

  it('a body cut before its last chunk is not whole when the connection closes', () => {
    const reader = new BodyReader({ kind: 'chunked' });
    read(reader, [Buffer.from('3\r\nabc\r\n', 'latin1')]);
    expect(reader.closed()).toBe(false);
  });
});

describe('heads', () => {
  it('give node\'s shape: names in lower case, repeats joined, set-cookie a list, a second Content-Type dropped', () => {
    const head = parseHead('HTTP/1.1 200 OK\r\nContent-Type: a/b\r\ncontent-type: c/d\r\nX-A: 1\r\nx-a: 2\r\nSet-Cookie: s=1\r\nset-cookie: t=2\r\nContent-Length: 0', 'GET');
    expect(head.headers).toEqual({ 'content-type': 'a/b', 'x-a': '1, 2', 'set-cookie': ['s=1', 't=2'], 'content-length': '0' });
    expect(head.statusCode).toBe(200);
  });

  it.each([
    ['HTTP/1.1 200 OK\r\ncontent-length: 5', 'GET', { kind: 'length', remaining: 5 }, true],
    ['HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked', 'GET', { kind: 'chunked' }, true],
    ['HTTP/1.1 200 OK\r\ntransfer-encoding: gzip', 'GET', { kind: 'close' }, false],
    ['HTTP/1.1 200 OK', 'GET', { kind: 'close' }, false],
    ['HTTP/1.1 204 No Content\r\ncontent-length: 5', 'DELETE', { kind: 'none' }, true],
    ['HTTP/1.1 304 Not Modified', 'GET', { kind: 'none' }, true],
    ['HTTP/1.1 200 OK\r\ncontent-length: 5', 'HEAD', { kind: 'none' }, true],
    ['HTTP/1.1 200 OK\r\nconnection: Keep-Alive, Close\r\ncontent-length: 5', 'GET', { kind: 'length', remaining: 5 }, false],
    ['HTTP/1.0 200 OK\r\ncontent-length: 5', 'GET', { kind: 'length', remaining: 5 }, false],
  ])('%j to %s: framing and whether the connection is kept', (text, method, framing, keepAlive) => {
    const head = parseHead(text, method);
    expect(head.framing).toEqual(framing);
    expect(head.keepAlive).toBe(keepAlive);
  });

  it.each([
    'HTTP/2 200 OK',
    'HTTP/1.1 20 OK',
    'HTTP/1.1 200OK',
    'http/1.1 200 OK',
    'HTTP/1.1 200 OK\r\nx-bad\u0001: 1',
    'HTTP/1.1 200 OK\r\nx-a: b\u0000c',
    'HTTP/1.1 200 OK\r\n: empty name',
    'HTTP/1.1 200 OK\r\ncontent-length: 1e3',
    'HTTP/1.1 200 OK\r\ncontent-length: 1234567890123456',
  ])('refuse %j', (text) => {
    expect(() => parseHead(text, 'GET')).toThrow(HttpParseError);
  });
});
