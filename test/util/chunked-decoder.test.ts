import { describe, expect, it } from 'vitest';
import { ChunkedDecoder, type ChunkedFault, type ChunkedLimits } from '../../src/util/chunked-decoder.js';

// The chunked-body state machine the client (service answers) and the control socket (requests)
// share, with each fault it reports. What each side makes of a fault, through real sockets: in
// test/client/direct-transport.test.ts and test/control/control-wire.test.ts.

class Fault extends Error {
  constructor(readonly fault: ChunkedFault) {
    super(fault.kind);
  }
}

const LIMITS: ChunkedLimits = { lineMaxBytes: 64, trailerMaxBytes: 40, sizeMaxDigits: 4, bodyMaxBytes: 100 };

function decode(text: string, limits = LIMITS, split = 0): { body: string; used: number; done: boolean; pieces: number } {
  const decoder = new ChunkedDecoder(limits, (f) => new Fault(f));
  const bytes = Buffer.from(text, 'latin1');
  const reads = split > 0 ? Array.from({ length: Math.ceil(bytes.length / split) }, (_, i) => bytes.subarray(i * split, (i + 1) * split)) : [bytes];
  const out: Buffer[] = [];
  let used = 0;
  for (const r of reads) used += decoder.feed(r, (p) => out.push(Buffer.from(p)));
  return { body: Buffer.concat(out).toString('latin1'), used, done: decoder.done, pieces: out.length };
}

function faultOf(text: string, limits = LIMITS): ChunkedFault {
  try {
    decode(text, limits);
  } catch (err) {
    if (err instanceof Fault) return err.fault;
    throw err;
  }
  throw new Error(`no fault for ${JSON.stringify(text)}`);
}

describe('the chunked decoder', () => {
  const body = '5\r\nhello\r\n6 ;name=value\r\n world\r\n0\r\nx-checksum: 1\r\n\r\n';

  it('gives the data, whole or a byte at a time, and uses no byte past the body', () => {
    for (const split of [0, 1, 2, 7]) {
      const r = decode(`${body}GET / HTTP/1.1\r\n`, LIMITS, split);
      expect(r).toMatchObject({ body: 'hello world', done: true, used: body.length });
    }
  });

  it('is not done until the trailer\'s empty line has come', () => {
    expect(decode('5\r\nhello\r\n0\r\n').done).toBe(false);
    expect(decode('5\r\nhello\r\n0\r\n\r\n').done).toBe(true);
  });

  it.each([
    ['a size line over the line limit', `${'0'.repeat(70)}\r\n`, 'line-too-long'],
    ['a line ended by LF alone', '5\nhello\r\n0\r\n\r\n', 'bare-lf'],
    ['data longer than its size', '3\r\nabcd\r\n0\r\n\r\n', 'chunk-overrun'],
    ['a size that is not hex', 'zz\r\n', 'bad-size'],
    ['a size with a sign', '+5\r\n', 'bad-size'],
    ['a size with leading whitespace', ' 5\r\nhello\r\n0\r\n\r\n', 'bad-size'],
    ['a size followed by text that is not an extension', '5 x\r\n', 'bad-size'],
    ['an empty size line', '\r\n', 'bad-size'],
    ['a size of more digits than allowed', '00005\r\n', 'bad-size'],
    ['a trailer over its limit', `0\r\n${'x-a: bbbbbbbb\r\n'.repeat(4)}\r\n`, 'trailer-too-large'],
  ])('reports %s', (_what, text, kind) => {
    expect(faultOf(text).kind).toBe(kind);
  });

  it('names the size line it could not read', () => {
    expect(faultOf('zz; a=b\r\n')).toEqual({ kind: 'bad-size', text: 'zz; a=b' });
  });

  it('refuses a body over its limit from the chunk\'s size, before any of its data', () => {
    const decoder = new ChunkedDecoder(LIMITS, (f) => new Fault(f));
    const out: Buffer[] = [];
    expect(() => decoder.feed(Buffer.from('32\r\n'.concat('x'.repeat(50), '\r\n'), 'latin1'), (p) => out.push(p))).not.toThrow();
    expect(() => decoder.feed(Buffer.from('33\r\n', 'latin1'), (p) => out.push(p))).toThrow(expect.objectContaining({ fault: { kind: 'body-too-large' } }));
    expect(Buffer.concat(out).length).toBe(50);
  });

  it('takes any body size when no limit is given', () => {
    const limits = { lineMaxBytes: 64, trailerMaxBytes: 40, sizeMaxDigits: 12 };
    expect(decode(`1000\r\n${'y'.repeat(4096)}\r\n0\r\n\r\n`, limits).body.length).toBe(4096);
  });
});
