import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { answerClientErrors, CLIENT_ERROR_LINGER_MS, unanswerable } from '../../src/util/http-client-error.js';
import { tmpDir } from '../helpers/tmp.js';

// Requests Node's HTTP parser refuses, over a real unix socket and real loopback TCP, from clients
// that keep sending after the refusal: each must read its answer, then the end of the connection.

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

interface Rig { where: string | { port: number; host: string }; handled: string[] }

async function serve(listen: 'unix' | 'tcp', opts: { headersTimeout?: number; maxHeaderSize?: number } = {}): Promise<Rig> {
  const handled: string[] = [];
  const srv = createServer({ connectionsCheckingInterval: 50, requestTimeout: 2_000, headersTimeout: 1_000, ...opts }, (req, res) => {
    if (unanswerable(req)) return;
    handled.push(`${req.method} ${req.url}`);
    res.end('ok\n');
  });
  answerClientErrors(srv);
  servers.push(srv);
  const where = listen === 'unix' ? join(tmpDir('ta-clienterr-'), 's.sock') : { port: 0, host: '127.0.0.1' };
  await new Promise<void>((resolve) => srv.listen(where, resolve));
  return { where: listen === 'unix' ? where : { port: (srv.address() as { port: number }).port, host: '127.0.0.1' }, handled };
}

/** Connects, writes `bytes` `chunk` at a time every `everyMs` until the server ends the connection; resolves with what it read. */
function trickle(rig: Rig, bytes: string, everyMs: number, chunk = 1): Promise<{ got: string; ms: number }> {
  const t0 = Date.now();
  const s: Socket = typeof rig.where === 'string' ? connect(rig.where) : connect(rig.where);
  let got = '';
  let i = 0;
  s.on('data', (d: Buffer) => { got += d.toString(); });
  s.on('error', () => {});
  const timer = setInterval(() => {
    if (!s.destroyed && i < bytes.length) s.write(bytes.slice(i, i += chunk));
  }, everyMs);
  return new Promise((resolve) => s.on('close', () => {
    clearInterval(timer);
    resolve({ got, ms: Date.now() - t0 });
  }));
}

const slowHeaders = `GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(5000)}\r\n\r\n`;

describe('requests the HTTP parser refuses (answerClientErrors)', () => {
  it('clients that keep writing their headers after the headers timeout each read 408 and why, over a unix socket and over TCP', async () => {
    for (const listen of ['unix', 'tcp'] as const) {
      const rig = await serve(listen, { headersTimeout: 300 });
      // A byte every millisecond: with Node's default (answer, then destroy at once) most of these
      // clients wrote into the closed socket before reading, and lost the 408.
      const answers = await Promise.all(Array.from({ length: 20 }, () => trickle(rig, slowHeaders, 1)));
      for (const a of answers) {
        expect(a.got, listen).toBe('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 35\r\n\r\nthe request did not arrive in time\n');
        expect(a.ms, listen).toBeLessThan(300 + 1_000 + CLIENT_ERROR_LINGER_MS + 1_000);
      }
      expect(rig.handled, listen).toEqual([]);
    }
  });

  it('a bad request line is answered 400 and headers over the limit 431, the client still sending', async () => {
    const rig = await serve('tcp', { maxHeaderSize: 1024 });
    const bad = await trickle(rig, `BREW /pot HTCPCP/1.0\r\n${'x'.repeat(200)}`, 1);
    expect(bad.got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\nnot a valid HTTP\/1\.1 request\n$/);
    const big = await trickle(rig, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(2000)}\r\n\r\n`, 1, 100);
    expect(big.got).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n[^]*\r\n\r\nthe request headers are larger than this server accepts\n$/);
    expect(rig.handled).toEqual([]);
  });

  it('a request that completes after its 408 is not run, and a client that never closes is cut off after the linger', async () => {
    const rig = await serve('unix', { headersTimeout: 300 });
    const s = connect(rig.where as string);
    let got = '';
    s.on('data', (d: Buffer) => { got += d.toString(); });
    s.on('error', () => {});
    // allowHalfOpen on the client: it does not close its side when the server ends, as a broken client would not.
    const closed = new Promise<number>((resolve) => s.on('close', () => resolve(Date.now())));
    s.write('POST /say HTTP/1.1\r\nHost: x\r\n');
    await sleep(700);
    expect(got).toMatch(/^HTTP\/1\.1 408 /);
    const answeredAt = Date.now();
    // The rest of the request arrives while the connection lingers: it must not reach the handler.
    s.write('Content-Length: 2\r\n\r\n{}');
    const at = await closed;
    expect(rig.handled).toEqual([]);
    expect(at - answeredAt).toBeLessThan(CLIENT_ERROR_LINGER_MS + 500);
  });

  it('a well-formed request is answered as before', async () => {
    const rig = await serve('unix');
    const r = await trickle(rig, 'GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 1, 1000);
    expect(r.got).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nok\n$/);
    expect(rig.handled).toEqual(['GET /status']);
  });
});
