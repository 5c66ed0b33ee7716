import { connect, type NetConnectOpts } from 'node:net';
import { mulberry32 } from '../../src/emulator/faults.js';

// Malformed HTTP/1.1 requests for the listeners' fuzz tests, generated from a seed: request lines,
// targets, header names and values, bodies, and chunked framing, each mutated from a well-formed
// request, plus the targets that once ended the daemon (`http://[` and its kin). The seed is fixed
// so a run can be replayed: FUZZ_SEED=<n> replays another one, and the tests print theirs.

/** The seed of this run: FUZZ_SEED when set, else a fixed one. */
export function fuzzSeed(): number {
  const env = process.env.FUZZ_SEED;
  const seed = env === undefined || env === '' ? 0x68_0068 : Number(env);
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED=${env} is not an integer`);
  return seed >>> 0;
}

/** A seeded generator (the emulator's chaos uses the same). */
export const seededRandom = mulberry32;

/** Request targets new URL() refuses although node:http passes them on. */
export const HOSTILE_TARGETS = ['http://[', 'http://a:b:c/', 'http://x:99999/', 'http://%zz/', 'http://[::1', 'https://[/', 'http://a b/', 'http://:/'];

const METHODS = ['GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'CONNECT', 'TRACE', 'G\x00T', 'get', 'GET\t', '', 'X'.repeat(300), 'PRI'];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.1 ', 'HTTP/11', 'http/1.1', 'HTTP/1.x', '', 'HTTP/1.1\x00'];
const ODD_BYTES = ['\x00', '\r', '\n', '\t', ' ', '\x7f', '\xff', '%', '%00', '%zz', '?', '#', '[', ']', '@', ':', '\\', '..', '//', '\u00e9', '\ud83d\ude00', '"', "'", '<', '>'];
const HEADER_NAMES = ['Host', 'Content-Length', 'Transfer-Encoding', 'Expect', 'Last-Event-ID', 'Cookie', 'Origin', 'Accept-Encoding', 'If-None-Match', 'Connection', 'Authorization', 'Content-Type', 'X-CSRF-Token', 'Upgrade', 'Range'];
const HEADER_VALUES = ['', ' ', '-1', '0', '99999999999999999999', '1e3', '0x10', 'chunked', 'gzip, chunked', 'chunked, chunked', '100-continue', 'later', 'NaN', '\x00', 'a\rb', 'a\x01b', '\xff\xfe', 'x'.repeat(9000), 'http://[', 'close', 'keep-alive, upgrade', 'bytes=0-', 'sid=%zz', 'abc', '18446744073709551616'];
const CHUNK_FRAMINGS = [
  '0\r\n\r\n', '5\r\nhello\r\n0\r\n\r\n', 'zz\r\n', 'ffffffffffffffff\r\nx\r\n', '5\r\nhi\r\n0\r\n\r\n', '2\r\n{}}\r\n0\r\n\r\n',
  '-1\r\nx\r\n', '5;ext=1\r\nhello\r\n0\r\n\r\n', '5\nhello\n0\n\n', '0\r\nTrailer: x\r\n\r\n', '0\r\nbad trailer\r\n\r\n', '3\r\n{}\r\n',
  `${'1'.repeat(40)}\r\n`, '5\r\nhello', '\r\n\r\n', '0x5\r\nhello\r\n0\r\n\r\n', `4;${'e'.repeat(20_000)}\r\n`,
];
const BODIES = ['', '{}', '{', 'null', '[]', '"x"', '{"text":1}', '{"text":"' + 'y'.repeat(70_000) + '"}', '\x00\x01\x02', '{"name":{"$gt":""}}', '{"__proto__":{"x":1}}', 'x'.repeat(100)];

export interface FuzzTarget {
  /** Well-formed paths of this listener, mutated into hostile ones. */
  paths: string[];
  /** Extra headers a request there usually carries (a cookie, a CSRF token). */
  headers?: Record<string, string>;
}

/** One generated request: its bytes, and what kind of mutation made it (for a failure's message). */
export interface FuzzRequest {
  kind: string;
  bytes: Buffer;
  /** Half-close after sending (a client that ends its side mid-request). */
  end: boolean;
}

/** `count` requests for `target`, the same ones for the same `rng` state. */
export function malformedRequests(rng: () => number, count: number, target: FuzzTarget): FuzzRequest[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rng() * list.length)]!;
  const int = (n: number) => Math.floor(rng() * n);
  const mutate = (text: string): string => {
    const chars = [...text];
    for (let i = 0, n = 1 + int(3); i < n; i++) {
      const at = int(chars.length + 1);
      const how = int(3);
      if (how === 0) chars.splice(at, 0, pick(ODD_BYTES));
      else if (how === 1) chars.splice(at, 1);
      else chars.splice(at, 1, pick(ODD_BYTES));
    }
    return chars.join('');
  };
  const path = () => pick(target.paths);
  const base = () => ({ Host: 'localhost', ...(target.headers ?? {}) });
  const head = (line: string, headers: Array<[string, string]>) => `${line}\r\n${headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}${headers.length ? '\r\n' : ''}\r\n`;
  const plain = (extra: Array<[string, string]> = []): Array<[string, string]> => [...Object.entries(base()), ...extra];

  const kinds: Array<[string, () => { text: string; end?: boolean }]> = [
    ['hostile target', () => ({ text: head(`${pick(['GET', 'POST', 'HEAD'])} ${pick(HOSTILE_TARGETS)}${pick(['', path(), '?a=%zz'])} HTTP/1.1`, plain()) })],
    ['mutated target', () => ({ text: head(`GET ${mutate(path())} HTTP/1.1`, plain()) })],
    ['odd query', () => ({ text: head(`GET ${path()}?${pick(['types=', 'types=%zz', 'last_event_id=-1', 'last_event_id=%ff', 'limit=1e999', 'q=' + '%'.repeat(50), 'a=1&a=2&a[]=3', 'offset=-5&limit=abc'])} HTTP/1.1`, plain()) })],
    ['request line', () => ({ text: head(`${pick(METHODS)}${pick([' ', '  ', '\t', ''])}${pick([path(), '*', '', mutate(path())])}${pick([' ', ''])}${pick(VERSIONS)}`, plain()) })],
    ['mutated request line', () => ({ text: head(mutate(`GET ${path()} HTTP/1.1`), plain()) })],
    ['header name', () => ({ text: head(`GET ${path()} HTTP/1.1`, plain([[mutate(pick(HEADER_NAMES)), 'x']])) })],
    ['header value', () => ({ text: head(`${pick(['GET', 'POST'])} ${path()} HTTP/1.1`, plain([[pick(HEADER_NAMES), pick(HEADER_VALUES)]])) })],
    ['header line', () => ({ text: `GET ${path()} HTTP/1.1\r\nHost: x\r\n${pick([' folded', 'nocolon', ': noname', 'A : b', 'X\x00: y', 'X:\ty\r\n\tz', 'Host: a\r\nHost: b'])}\r\n\r\n` })],
    ['line endings', () => ({ text: `GET ${path()} HTTP/1.1${pick(['\n', '\r', '\r\r\n', '\n\r'])}Host: x${pick(['\n\n', '\r\n\n', '\n\r\n', '\r\r\n\r\n'])}` })],
    ['body length', () => {
      const body = pick(BODIES);
      const declared = pick([String(Buffer.byteLength(body)), String(Buffer.byteLength(body) + 5), '0', '-1', '1 2', String(Buffer.byteLength(body) - 1 < 0 ? 0 : Buffer.byteLength(body) - 1)]);
      return { text: head(`POST ${path()} HTTP/1.1`, plain([['Content-Type', 'application/json'], ['Content-Length', declared]])) + body, end: rng() < 0.5 };
    }],
    ['chunked framing', () => ({ text: head(`POST ${path()} HTTP/1.1`, plain([['Content-Type', 'application/json'], ['Transfer-Encoding', pick(['chunked', 'Chunked', 'chunked ', 'x, chunked'])]])) + pick(CHUNK_FRAMINGS), end: rng() < 0.5 })],
    ['both framings', () => ({ text: head(`POST ${path()} HTTP/1.1`, plain([['Content-Length', '3'], ['Transfer-Encoding', 'chunked']])) + '3\r\n{}}\r\n0\r\n\r\n' })],
    ['cut short', () => {
      const whole = head(`POST ${path()} HTTP/1.1`, plain([['Content-Length', '2']])) + '{}';
      return { text: whole.slice(0, int(whole.length)), end: true };
    }],
    ['random bytes', () => ({ text: Array.from({ length: 1 + int(200) }, () => String.fromCharCode(int(256))).join(''), end: rng() < 0.5 })],
    ['huge head', () => ({ text: head(`GET ${path()} HTTP/1.1`, plain(Array.from({ length: 1 + int(200) }, (_, i) => [`X-${i}`, 'v'.repeat(int(400))] as [string, string]))) })],
  ];
  const out: FuzzRequest[] = [];
  // Each hostile target once, as such, before the generated ones.
  for (const t of HOSTILE_TARGETS) out.push({ kind: `hostile target ${t}`, bytes: Buffer.from(head(`GET ${t} HTTP/1.1`, plain()), 'latin1'), end: false });
  while (out.length < count) {
    const [kind, make] = pick(kinds);
    const { text, end } = make();
    out.push({ kind, bytes: Buffer.from(text, 'latin1'), end: end ?? false });
  }
  return out;
}

export interface RawAnswer {
  /** The status of the first answer, or undefined when none came before the close or the deadline. */
  status: number | undefined;
  text: string;
}

/** The body of the first answer in `text`, by its Content-Length; undefined when it has none or is compressed. */
export function firstBody(text: string): string | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = text.slice(0, end);
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (!length || /\r\ncontent-encoding:/i.test(head)) return undefined;
  return Buffer.from(text.slice(end + 4), 'latin1').subarray(0, Number(length[1])).toString('utf8');
}

/** Sends `req` on a connection of its own and reads what comes back until the close or `waitMs`. */
export function sendRaw(where: NetConnectOpts, req: FuzzRequest, waitMs: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const s = connect({ ...where, allowHalfOpen: true } as NetConnectOpts);
    let got = '';
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      const m = /^HTTP\/1\.[01] (\d{3}) /.exec(got);
      resolve({ status: m ? Number(m[1]) : undefined, text: got });
    };
    const timer = setTimeout(done, waitMs);
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    s.on('close', done);
    s.on('error', done);
    s.write(req.bytes);
    if (req.end) s.end();
  });
}

/** Sends `requests` in batches of `batchSize` at once, calling `afterBatch` after each. */
export async function fuzzInBatches(where: NetConnectOpts, requests: FuzzRequest[], batchSize: number, waitMs: number, afterBatch: (answers: Array<{ req: FuzzRequest; answer: RawAnswer }>) => Promise<void>): Promise<Array<{ req: FuzzRequest; answer: RawAnswer }>> {
  const all: Array<{ req: FuzzRequest; answer: RawAnswer }> = [];
  for (let i = 0; i < requests.length; i += batchSize) {
    const batch = requests.slice(i, i + batchSize);
    const answers = await Promise.all(batch.map(async (req) => ({ req, answer: await sendRaw(where, req, waitMs) })));
    all.push(...answers);
    await afterBatch(answers);
  }
  return all;
}
