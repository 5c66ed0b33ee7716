import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { answerClientErrors, CLIENT_ERROR_LINGER_MS, unanswerable } from '../../src/util/http-client-error.js';
import { tmpDir } from '../helpers/tmp.js';
import { trickle, type Where } from '../helpers/trickle-client.js';

// Requests Node's HTTP parser refuses, over a real unix socket and real loopback TCP, from clients
// that keep sending after the refusal: each must read its answer, then the end of the connection.

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

interface Rig { where: Where; handled: string[]; server: Server }

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
  return { where: listen === 'unix' ? where : { port: (srv.address() as { port: number }).port, host: '127.0.0.1' }, handled, server: srv };
}

const slowHeaders = `GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(5000)}\r\n\r\n`;

describe('requests the HTTP parser refuses (answerClientErrors)', () => {
  it('clients that keep writing their headers after the headers timeout each read 408 and why, over a unix socket and over TCP', async () => {
    for (const listen of ['unix', 'tcp'] as const) {
      const rig = await serve(listen, { headersTimeout: 300 });
      // A byte every millisecond: with Node's default (answer, then destroy at once) most of these
      // clients wrote into the closed socket before reading, and lost the 408.
      const answers = await Promise.all(Array.from({ length: 20 }, () => trickle(rig.where, slowHeaders, 1)));
      for (const a of answers) {
        expect(a.got, listen).toBe('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 35\r\n\r\nthe request did not arrive in time\n');
        expect(a.ms, listen).toBeLessThan(300 + 1_000 + CLIENT_ERROR_LINGER_MS + 1_000);
      }
      expect(rig.handled, listen).toEqual([]);
    }
  });

  it('a bad request line is answered 400 and headers over the limit 431, the client still sending', async () => {
    const rig = await serve('tcp', { maxHeaderSize: 1024 });
    const bad = await trickle(rig.where, `BREW /pot HTCPCP/1.0\r\n${'x'.repeat(200)}`, 1);
    expect(bad.got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\nnot a valid HTTP\/1\.1 request: [^\n]+\n$/);
    const big = await trickle(rig.where, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(2000)}\r\n\r\n`, 1, 100);
    expect(big.got).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n[^]*\r\n\r\nthe request headers are larger than this server accepts\n$/);
    expect(rig.handled).toEqual([]);
  });

  it('a request that completes after its 408 is not run, and a client that never closes is cut off after the linger', async () => {
    const rig = await serve('unix', { headersTimeout: 300 });
    // allowHalfOpen: the client does not close its side when the server ends, as a broken client
    // would not, so the rest of its request reaches the server while the connection lingers.
    const s = connect({ path: rig.where as string, allowHalfOpen: true });
    onTestFinished(() => { s.destroy(); });
    let got = '';
    s.on('data', (d: Buffer) => { got += d.toString(); });
    s.on('error', () => {});
    s.write('POST /say HTTP/1.1\r\nHost: x\r\n');
    const until = Date.now() + 5_000;
    while (!got && Date.now() < until) await sleep(10);
    expect(got).toMatch(/^HTTP\/1\.1 408 /);
    // Without the guard, Node's parser would hand this POST to the handler on the ended socket.
    s.write('Content-Length: 2\r\n\r\n{}');
    await sleep(CLIENT_ERROR_LINGER_MS + 300);
    expect(rig.handled).toEqual([]);
    // The server let go of the connection at the end of the linger, the client's side still open.
    expect(s.destroyed).toBe(false);
    expect(await new Promise<number>((resolve, reject) => rig.server.getConnections((err, n) => (err ? reject(err) : resolve(n))))).toBe(0);
  });

  it('a well-formed request is answered as before', async () => {
    const rig = await serve('unix');
    const r = await trickle(rig.where, 'GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 1, 1000);
    expect(r.got).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nok\n$/);
    expect(rig.handled).toEqual(['GET /status']);
  });
});
