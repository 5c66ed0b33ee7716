import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createControlServer, type ControlServer } from '../../src/control/control-server.js';
import { createEventBus } from '../../src/events/event-bus.js';
import { serveEventStream } from '../../src/events/sse.js';
import { silentLogger } from '../../src/log/logger.js';
import { tmpDirManual } from '../helpers/tmp.js';

// The control socket's HTTP/1.1 (node:http, src/control/control-server.ts) over a real unix socket:
// what curl (the client README names) sends, and what a hostile or broken local client sends,
// each refusal answered with its status and a JSON error saying what is wrong. The handlers are
// stand-ins that echo what they were given (the daemon's are tested in control-socket.test.ts).

const run = promisify(execFile);
let tmp: { dir: string; remove(): void };
let server: ControlServer;
let socketPath: string;
const said: Array<Record<string, unknown>> = [];
let hangUp: { resolve(reason: string): void } | undefined;
const bus = createEventBus();

beforeAll(async () => {
  tmp = tmpDirManual('ta-ctl-wire-');
  socketPath = join(tmp.dir, 'control.sock');
  server = createControlServer({
    socketPath, logger: silentLogger(),
    handlers: {
      status: () => ({ ok: true }),
      faces: () => [],
      syncFaces: async () => ({}),
      say: async (body) => {
        said.push(body);
        return { played: true };
      },
      // Waits for the caller to hang up, and tells the test it saw it.
      enrollVoiceprint: (_body, signal) => new Promise((resolve) => {
        signal.addEventListener('abort', () => {
          hangUp?.resolve(String((signal.reason as Error).message));
          resolve({});
        });
      }),
      metrics: async () => ({ contentType: 'text/plain; version=0.0.4', text: '# HELP x y\nx 1\n' }),
      events: (req, res, signal) => serveEventStream(req, res, bus, { signal }),
    },
  });
  await server.start();
});
afterAll(async () => {
  await server?.stop();
  tmp?.remove();
});

/** Sends `bytes` raw (then half-closes when `end`), and returns all that comes back until the server closes. */
function raw(bytes: string, end = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ path: socketPath, allowHalfOpen: true });
    let got = '';
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    s.on('end', () => s.end());
    s.on('close', () => resolve(got));
    s.on('error', reject);
    s.write(bytes);
    if (end) s.end();
  });
}

/** The status and the JSON error of a refusal, and its headers as text. */
function refusal(answer: string): { status: number; head: string; error: string; code: string } {
  const [head, body] = answer.split('\r\n\r\n', 2) as [string, string];
  const parsed = JSON.parse(body) as { error: string; code: string };
  return { status: Number(head.slice(9, 12)), head, error: parsed.error, code: parsed.code };
}

describe('the control socket\'s HTTP/1.1, with curl', () => {
  it('GET /status: 200, JSON, Content-Length, Date and Connection: close', async () => {
    const { stdout } = await run('curl', ['-sS', '-i', '--unix-socket', socketPath, 'http://localhost/status']);
    expect(stdout).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(stdout).toMatch(/\r\nconnection: close\r\n/i);
    expect(stdout).toMatch(/\r\ndate: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\r\n/i);
    expect(stdout).toMatch(/\r\ncontent-length: 12\r\n/i);
    expect(stdout.endsWith('\r\n\r\n{"ok":true}\n')).toBe(true);
  });

  it('POST /say with a JSON body by Content-Length, chunked, and with Expect: 100-continue', async () => {
    said.length = 0;
    const curl = (...args: string[]) => run('curl', ['-sS', '--fail-with-body', '--unix-socket', socketPath, '-H', 'Content-Type: application/json', ...args, 'http://localhost/say']);
    expect((await curl('-d', '{"text":"hello"}')).stdout).toBe('{"played":true}\n');
    expect((await curl('-H', 'Transfer-Encoding: chunked', '-d', '{"text":"in chunks"}')).stdout).toBe('{"played":true}\n');
    const long = 'x'.repeat(60_000);
    const t0 = Date.now();
    // curl asks for a 100 itself only for bodies over 1 MB (7.88); a client may ask for any.
    const big = await run('curl', ['-sS', '-v', '--fail-with-body', '--unix-socket', socketPath, '-H', 'Content-Type: application/json', '-H', 'Expect: 100-continue', '-d', JSON.stringify({ text: long }), 'http://localhost/say']);
    expect(big.stderr).toMatch(/> Expect: 100-continue/);
    expect(big.stderr).toMatch(/< HTTP\/1\.1 100 Continue/);
    // curl waits a second for the 100 before sending anyway; it was answered at once.
    expect(Date.now() - t0).toBeLessThan(900);
    expect(said).toEqual([{ text: 'hello' }, { text: 'in chunks' }, { text: long }]);
  });

  it('a body over 64 KB is refused with 413 and a JSON error, unread, and curl reads the answer', async () => {
    const res = await run('curl', ['-sS', '-w', '%{http_code}', '--unix-socket', socketPath, '-H', 'Content-Type: application/json', '-d', JSON.stringify({ text: 'y'.repeat(70_000) }), 'http://localhost/say']);
    expect(res.stdout.slice(-3)).toBe('413');
    expect(JSON.parse(res.stdout.slice(0, -3))).toEqual({ error: 'the request body is larger than 65536 bytes, the most the control socket takes', code: 'TA_ERR_USAGE', exit_code: 64 });
  });

  it('GET /events with curl -N streams events as they are published', async () => {
    const curl = spawn('curl', ['-sS', '-N', '--unix-socket', socketPath, 'http://localhost/events?types=test.']);
    let out = '';
    curl.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const until = async (pred: () => boolean) => {
      for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
    };
    await until(() => out.includes(': terminal-agent events'));
    bus.publish('test.one', { n: 1 });
    bus.publish('other', { n: 2 });
    await until(() => out.includes('event: test.one'));
    curl.kill();
    expect(out).toMatch(/^retry: 2000\n: terminal-agent events\n\nid: \d+\nevent: test\.one\ndata: \{[^\n]*"n":1[^\n]*\}\n\n$/);
  });
});

const BAD = /^not a valid HTTP\/1\.1 request: \w/;

describe('the control socket refuses what is not a well-formed request, saying what is wrong', () => {
  // Framing is node:http's (llhttp, strict): its reason is passed on. The rest is the socket's own.
  const cases: Array<[string, string, number, RegExp]> = [
    ['a line ended by LF alone', 'GET /status HTTP/1.1\nHost: x\n\n', 400, /^not a valid HTTP\/1\.1 request: Expected CRLF/],
    ['an HTTP/1.1 request without Host', 'GET /status HTTP/1.1\r\n\r\n', 400, /must have a Host header/],
    ['a request line of four parts', 'GET /status x HTTP/1.1\r\nHost: x\r\n\r\n', 400, BAD],
    ['a target that is not a path', 'GET status HTTP/1.1\r\nHost: x\r\n\r\n', 400, BAD],
    ['a target that is no URL', 'GET http://[ HTTP/1.1\r\nHost: x\r\n\r\n', 400, /request target is not a valid URL/],
    ['a header line folded onto the one before', 'GET /status HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n', 400, BAD],
    ['a header with a space before its colon', 'GET /status HTTP/1.1\r\nHost : x\r\n\r\n', 400, BAD],
    ['a header line with no colon', 'GET /status HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n', 400, BAD],
    ['a control character in a header', 'GET /status HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n', 400, BAD],
    ['both Content-Length and Transfer-Encoding', 'POST /say HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}', 400, BAD],
    ['two Content-Lengths', 'POST /say HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}', 400, BAD],
    ['a Content-Length that is not a number', 'POST /say HTTP/1.1\r\nHost: x\r\nContent-Length: 0x2\r\n\r\n{}', 400, BAD],
    ['a Transfer-Encoding other than chunked', 'POST /say HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n', 400, /Transfer-Encoding gzip, chunked is not accepted/],
    ['an Expect other than 100-continue', 'POST /say HTTP/1.1\r\nHost: x\r\nExpect: later\r\nContent-Length: 2\r\n\r\n{}', 417, /Expect: later is not supported/],
    ['a Content-Length over 64 KB', 'POST /say HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n', 413, /larger than 65536 bytes/],
    ['a chunked body over 64 KB', `POST /say HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8000\r\n${'a'.repeat(0x8000)}\r\n8001\r\n${'a'.repeat(0x8001)}\r\n`, 413, /larger than 65536 bytes/],
    ['a chunk size that is not hexadecimal', 'POST /say HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400, BAD],
    ['a chunk longer than its size', 'POST /say HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}}\r\n0\r\n\r\n', 400, BAD],
    ['a head over 16 KB', `GET /status HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(17_000)}\r\n\r\n`, 431, /request headers are larger than this server accepts/],
    ['a request body that is not JSON', 'POST /say HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello', 400, /request body is not JSON/],
  ];
  for (const [what, bytes, status, message] of cases) {
    it(`${what}: ${status}`, async () => {
      const r = refusal(await raw(bytes));
      expect(r.status).toBe(status);
      expect(r.error).toMatch(message);
      expect(r.code).toBe('TA_ERR_USAGE');
      expect(r.head).toMatch(/\r\nConnection: close\r\n/i);
    });
  }

  it('a request cut short by the client\'s end is answered 400, and one with nothing sent is just closed', async () => {
    const r = refusal(await raw('GET /status HTTP/1.1\r\nHost: x\r\n', true));
    expect(r.status).toBe(400);
    expect(r.error).toBe('the connection ended before the whole request came');
    expect(await raw('', true)).toBe('');
  });

  it('HTTP/1.0 without Host is served; HEAD gets the head without a body; leading blank lines are skipped', async () => {
    expect(await raw('GET /status HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"ok":true\}\n$/);
    expect(await raw('\r\nGET /status HTTP/1.1\r\nHost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // HEAD of a GET route: GET's head (its Content-Length too), no body.
    const head = await raw('HEAD /status HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head).toMatch(/\r\ncontent-length: 12\r\n/i);
    expect(head.endsWith('\r\n\r\n')).toBe(true);
  });

  it('a method a route does not take: 405 with an Allow header naming those it does, and a JSON error', async () => {
    for (const [request, allowed] of [
      ['POST /status HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', 'GET, HEAD'],
      ['DELETE /faces HTTP/1.1\r\nHost: x\r\n\r\n', 'GET, HEAD'],
      ['GET /say HTTP/1.1\r\nHost: x\r\n\r\n', 'POST'],
      ['HEAD /events HTTP/1.1\r\nHost: x\r\n\r\n', 'GET'],
    ] as const) {
      const answer = await raw(request);
      expect(answer).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
      expect(answer).toMatch(new RegExp(`\r\nallow: ${allowed}\r\n`, 'i'));
      if (!request.startsWith('HEAD')) expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'TA_ERR_USAGE', error: expect.stringContaining(`takes ${allowed}, not`) });
    }
  });

  it('two requests in one write: the first is answered and the connection closed, the second not run', async () => {
    said.length = 0;
    const one = 'POST /say HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{"text":"a"}';
    const answer = await raw(one + one.replace('"a"', '"b"'));
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(said).toEqual([{ text: 'a' }]);
  });

  it('a caller that hangs up while its request is answered: the handler\'s signal aborts', async () => {
    const seen = new Promise<string>((resolve) => (hangUp = { resolve }));
    const s = connect(socketPath);
    s.on('error', () => {});
    s.write('POST /voiceprint/enroll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    await new Promise((r) => setTimeout(r, 100));
    s.destroy();
    expect(await seen).toBe('caller hung up');
  });
});
