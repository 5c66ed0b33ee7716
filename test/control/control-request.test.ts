import { afterEach, describe, expect, it } from 'vitest';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { ControlTimeout, DaemonNotRunningError, controlClient, controlRequest } from '../../src/control/control-client.js';
import { tmpDir } from '../helpers/tmp.js';

// The control client's one exchange over the unix socket (node:http), against node's own HTTP
// server as the daemon runs it and against servers that answer oddly.

const servers: Array<HttpServer | NetServer> = [];
const connections = new Set<Socket>();
afterEach(async () => {
  // close() waits for open connections: the tests' odd servers leave theirs open.
  for (const c of connections) c.destroy();
  connections.clear();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen<T extends HttpServer | NetServer>(server: T): Promise<string> {
  const path = join(tmpDir(), 's.sock');
  servers.push(server);
  server.on('connection', (c: Socket) => connections.add(c));
  await new Promise<void>((r) => server.listen(path, r));
  return path;
}

describe('controlRequest', () => {
  it('reads a Content-Length answer, a chunked one and sends a JSON body', async () => {
    const socket = await listen(createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/chunked') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first ');
          setTimeout(() => res.end('second ü'), 20);
          return;
        }
        const text = JSON.stringify({ method: req.method, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      });
    }));
    expect(await controlRequest(socket, 'POST', '/x', '{"a":"ü"}', 5000)).toEqual({ status: 201, text: JSON.stringify({ method: 'POST', body: '{"a":"ü"}' }) });
    expect(await controlRequest(socket, 'GET', '/chunked', undefined, 5000)).toEqual({ status: 200, text: 'first second ü' });
  });

  it('does not wait for a server that keeps the socket open once the announced length is in, and closes the socket itself', async () => {
    let closed: Promise<void> | undefined;
    const socket = await listen(createNetServer((s) => {
      closed = new Promise((r) => s.on('close', () => r()));
      s.on('data', () => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    }));
    expect(await controlRequest(socket, 'GET', '/', undefined, 5000)).toEqual({ status: 200, text: 'ok' });
    await expect(Promise.race([closed, new Promise((r) => setTimeout(() => r('still open'), 2000))])).resolves.toBeUndefined();
  });

  it('reads an answer larger than one read, in pieces', async () => {
    const big = 'x'.repeat(300_000);
    const socket = await listen(createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': big.length });
      res.end(big);
    }));
    expect(await controlRequest(socket, 'GET', '/big', undefined, 5000)).toEqual({ status: 200, text: big });
  });

  it('fails clearly on an answer that is not HTTP, one cut short, and no answer in time', async () => {
    const garbage = await listen(createNetServer((s) => s.on('data', () => s.end('hello\r\n\r\n'))));
    await expect(controlRequest(garbage, 'GET', '/', undefined, 5000)).rejects.toThrow(/not HTTP/);
    const short = await listen(createNetServer((s) => s.on('data', () => s.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'))));
    await expect(controlRequest(short, 'GET', '/', undefined, 5000)).rejects.toThrow(/closed before a whole answer/);
    const silent = await listen(createNetServer(() => undefined));
    await expect(controlRequest(silent, 'GET', '/', undefined, 100)).rejects.toBeInstanceOf(ControlTimeout);
  });

  it('a client with nothing at its socket fails with DaemonNotRunningError (status then loads the config)', async () => {
    const err = await controlClient(join(tmpDir(), 'none.sock')).status().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DaemonNotRunningError);
    expect((err as Error).message).toMatch(/no terminal-agent daemon is running/);
  });
});
