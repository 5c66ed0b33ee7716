import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { startRig, PNG_BYTES, TEST_UA, type Rig } from './fixtures.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { makeLocalhostCert } from '../helpers/tls-cert.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { ConfigError, NetworkError } from '../../src/errors.js';
import { createServiceClient } from '../../src/client/service-client.js';
import { silentLogger } from '../../src/log/logger.js';

// The connection side: proxies from the environment the caller passes in, an extra CA, and no
// credential over plain http to a non-loopback host. The proxy and the TLS server are small
// local stand-ins (a CONNECT proxy and an https endpoint with a self-signed certificate), because
// neither exists on this machine otherwise.

let rig: Rig;
let tmp: { dir: string; remove(): void };
let certPath: string;
let keyPath: string;
let https: { port: number; seen: IncomingHttpHeaders[]; close(): void };
let proxy: ConnectProxy;

beforeAll(async () => {
  rig = await startRig();
  tmp = tmpDirManual('ta-client-tls-');
  ({ certPath, keyPath } = makeLocalhostCert(tmp.dir));

  const seen: IncomingHttpHeaders[] = [];
  const server = createHttpsServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, (req, res) => {
    seen.push(req.headers);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  https = { port: (server.address() as AddressInfo).port, seen, close: () => server.close() };

  // A CONNECT proxy; `terminal.example:80` is routed to the emulator so no DNS is needed.
  const emuPort = rig.emu.port;
  proxy = await startConnectProxy((host, port) => (host === 'terminal.example' ? { host: '127.0.0.1', port: emuPort } : { host, port }));
});

afterAll(() => {
  https?.close();
  proxy?.close();
  tmp?.remove();
});

const httpsBase = () => `https://localhost:${https.port}/v1/api`;

describe('TLS and proxies', () => {
  it('trusts a private CA from service.ca_file (appended to the public roots)', async () => {
    const client = rig.clientWith({ face_base_url: httpsBase(), ca_file: certPath });
    await expect(client.listFaces()).resolves.toEqual([]);
    const h = https.seen.at(-1)!;
    expect(h['user-agent']).toBe(TEST_UA);
    expect(h.authorization).toBe(`Bearer ${rig.config.terminal_secret}`);
  });

  it('without the CA the certificate is refused with a hint naming service.ca_file', async () => {
    const client = rig.clientWith({ face_base_url: httpsBase(), retries: 0 });
    const err = await client.listFaces().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as Error).message).toContain('service.ca_file');
  });

  it('goes through HTTPS_PROXY (CONNECT tunnel) and bypasses it for NO_PROXY hosts', async () => {
    const env = { HTTPS_PROXY: `http://127.0.0.1:${proxy.port}` };
    await rig.clientWith({ face_base_url: httpsBase(), ca_file: certPath }, { env }).listFaces();
    expect(proxy.connects.at(-1)).toBe(`localhost:${https.port}`);

    const before = proxy.connects.length;
    await rig.clientWith({ face_base_url: httpsBase(), ca_file: certPath }, { env: { ...env, NO_PROXY: 'localhost' } }).listFaces();
    expect(proxy.connects.length).toBe(before);
  });

  it('plain http:// goes through HTTP_PROXY; a non-loopback host needs allow_insecure_http', async () => {
    const env = { HTTP_PROXY: `http://127.0.0.1:${proxy.port}` };
    const remote = { base_url: 'http://terminal.example', face_base_url: 'http://terminal.example/v1/api' };
    const refused = rig.clientWith(remote, { env });
    const before = rig.emu.requests.length;
    const err = await refused.listFaces().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]).toMatchObject({ path: 'service.face_base_url', message: expect.stringContaining('allow_insecure_http') });
    expect(rig.emu.requests.length).toBe(before);

    const allowed = rig.clientWith({ ...remote, allow_insecure_http: true }, { env });
    await expect(allowed.listFaces()).resolves.toBeInstanceOf(Array);
    expect(proxy.connects.at(-1)).toBe('terminal.example:80');
    expect(rig.emu.requests.at(-1)).toMatchObject({ path: '/v1/api/faces', status: 200, userAgent: TEST_UA });

    // An image held in memory goes as its multipart pieces; through the proxy (undici) too, intact.
    await allowed.createFace({ name: 'Proxied', image: { path: 'p.png', bytes: Buffer.from(PNG_BYTES), contentType: 'image/png' } });
    expect(rig.emu.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/api/faces', status: 200 });
    const face = (await rig.client.listFaces()).find((f) => f.name === 'Proxied')!;
    const img = await rig.client.getFaceImage(face.face_id);
    if (img.notModified) throw new Error('expected the image');
    const chunks: Buffer[] = [];
    for await (const c of img.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(PNG_BYTES));
  });

  it('never reads the process environment: a proxy set there is ignored', async () => {
    const saved = process.env.HTTP_PROXY;
    process.env.HTTP_PROXY = 'http://127.0.0.1:1';
    try {
      await expect(rig.clientWith({}).listFaces()).resolves.toBeInstanceOf(Array);
    } finally {
      if (saved === undefined) delete process.env.HTTP_PROXY;
      else process.env.HTTP_PROXY = saved;
    }
  });

  it('the service sees the headers node:http would write: Host as the URL names it, the body\'s length, kept-alive connections', async () => {
    const seen: { method: string; host: string | undefined; length: string | undefined; bytes: number; port: number }[] = [];
    const server = createHttpServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => { bytes += c.length; });
      req.on('end', () => {
        seen.push({ method: req.method!, host: req.headers.host, length: req.headers['content-length'], bytes, port: req.socket.remotePort! });
        res.setHeader('content-type', 'application/json');
        res.end(req.method === 'GET' ? '[]' : '{"code":0}');
      });
    });
    // IPv6 loopback where the machine has it (a container may not): the Host header needs brackets there.
    const v6 = await new Promise<boolean>((resolve) => {
      const probe = createNetServer().once('error', () => resolve(false)).listen(0, '::1', () => probe.close(() => resolve(true)));
    });
    await new Promise<void>((resolve) => server.listen(0, v6 ? '::' : '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const hosts = v6 ? ['127.0.0.1', '[::1]'] : ['127.0.0.1'];
    try {
      for (const host of hosts) {
        const client = rig.clientWith({ face_base_url: `http://${host}:${port}/v1/api`, retries: 0 });
        for (let i = 0; i < 3; i++) {
          await client.listFaces();
          await client.createFace({ name: 'Ada', image: { path: 'face.png', bytes: Buffer.from(PNG_BYTES), contentType: 'image/png' } });
        }
        await client.close();
      }
      expect(seen.map((s) => s.host)).toEqual(hosts.flatMap((h) => Array<string>(6).fill(`${h}:${port}`)));
      for (const s of seen.filter((x) => x.method === 'POST')) expect(Number(s.length)).toBe(s.bytes);
      // The six requests to one host went over kept-alive connections: undici's pool takes a
      // connection back a moment after its answer ends, so a call made at once may open a second.
      for (let i = 0; i < seen.length; i += 6) expect(new Set(seen.slice(i, i + 6).map((s) => s.port)).size).toBeLessThanOrEqual(2);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('an image sent from its file over HTTPS arrives whole at once, not after the server\'s delayed ACK', async () => {
    // A body read from disk goes out as several writes; the last (the multipart's closing
    // boundary) is small. With Nagle's algorithm on, it waited for the ACK of what went before,
    // which the server delays (~40 ms on Linux): node's agent asks for TCP_NODELAY, but
    // tls.connect drops it (nodejs/node#62003). The server notes, for each upload, the time from
    // its first body bytes to its last.
    const spans: number[] = [];
    const server = createHttpsServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, (req, res) => {
      let first = 0;
      req.on('data', () => { first ||= performance.now(); });
      req.on('end', () => {
        spans.push(performance.now() - first);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"return_code":0}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const image = join(tmp.dir, 'face.jpg');
    writeFileSync(image, Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(30 * 1024), Buffer.from([0xff, 0xd9])]));
    const client = rig.clientWith({ face_base_url: `https://localhost:${(server.address() as AddressInfo).port}/v1/api`, ca_file: certPath, retries: 0 });
    try {
      for (let i = 0; i < 10; i++) {
        await expect(client.createFace({ name: `face-${i}`, image: { path: image, contentType: 'image/jpeg' } })).resolves.toEqual({ return_code: 0, return_message: '' });
      }
    } finally {
      await client.close();
      server.close();
    }
    expect(spans).toHaveLength(10);
    // Nagle's wait is >= 40 ms on every upload but the connection's first few (Linux ACKs those at
    // once); without it the pieces follow each other within a millisecond or two.
    expect(spans.sort((a, b) => a - b)[5]).toBeLessThan(20);
  });

  it('close() lets an exchange in flight finish, then refuses new calls', async () => {
    const client = rig.clientWith({ retries: 0 });
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'delay', delayMs: 300, times: 1 });
    const listing = client.listFaces();
    await new Promise((r) => setTimeout(r, 100));
    const closed = client.close();
    await expect(listing).resolves.toBeInstanceOf(Array);
    await closed;
    const err = await client.listFaces().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).notSent).toBe(false);
  });

  it('a service that takes the TCP connection but never answers TLS fails at the 10 s connect timeout, as not sent', async () => {
    // A listener that accepts and stays silent: the TLS handshake never completes.
    const held: Socket[] = [];
    const silent = createNetServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (silent.address() as AddressInfo).port;
      const client = rig.clientWith({ face_base_url: `https://localhost:${port}/v1/api`, request_timeout: 60_000, retries: 0 });
      const t0 = Date.now();
      const err = await client.listFaces().catch((e: unknown) => e);
      const took = Date.now() - t0;
      expect(err).toBeInstanceOf(NetworkError);
      expect((err as NetworkError).notSent).toBe(true);
      // localhost may be ::1 and 127.0.0.1 both (Debian 13's /etc/hosts): undici then names every address it tried.
      expect((err as Error).message).toMatch(/Connect Timeout Error \(attempted address(es)?: [^)]*:\d+, timeout: 10000ms\)\).*cannot be reached/);
      expect(took).toBeGreaterThanOrEqual(9_900);
      expect(took).toBeLessThan(20_000);
      expect(held.length).toBe(1);
    } finally {
      held.forEach((s) => s.destroy());
      silent.close();
    }
  }, 30_000);

  it('an unreadable ca_file is a ConfigError naming the key when the client is built', () => {
    expect(() => createServiceClient({
      config: { ...rig.config, ca_file: join(tmp.dir, 'missing.pem') }, logger: silentLogger(), userAgent: TEST_UA,
    })).toThrow(ConfigError);
  });
});
