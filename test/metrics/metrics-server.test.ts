import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { Counter, Registry } from 'prom-client';
import { createMetricsServer, type MetricsServer } from '../../src/metrics/metrics-server.js';
import { scrape } from '../../src/daemon/daemon-metrics.js';
import { silentLogger } from '../../src/log/logger.js';
import { configSchema } from '../../src/config/schema.js';
import { trickle } from '../helpers/trickle-client.js';

const started: MetricsServer[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.stop();
});

function server(listen: string): MetricsServer {
  const registry = new Registry();
  new Counter({ name: 'terminal_agent_test_total', help: 'a test counter', registers: [registry] }).inc(3);
  const s = createMetricsServer({ listen, scrape: () => scrape([registry]), logger: silentLogger() });
  started.push(s);
  return s;
}

const URLS = { base_url: 'https://api.example.com', face_base_url: 'https://api.example.com/v1/api' };

describe('metrics.listen', () => {
  it('is off by default and loopback unless allow_remote says otherwise', () => {
    expect(configSchema.parse({ service: URLS }).metrics).toEqual({ allow_remote: false });
    for (const listen of ['127.0.0.1:9464', 'localhost:9464', '[::1]:9464', '127.0.0.2:0']) {
      expect(configSchema.safeParse({ service: URLS, metrics: { listen } }).success).toBe(true);
    }
    const remote = configSchema.safeParse({ service: URLS, metrics: { listen: '0.0.0.0:9464' } });
    expect(remote.success).toBe(false);
    expect(remote.error!.issues[0]).toMatchObject({ path: ['metrics', 'listen'] });
    expect(remote.error!.issues[0]!.message).toMatch(/^0\.0\.0\.0:9464 is not a loopback address: .*metrics\.allow_remote: true/);
    expect(configSchema.parse({ service: URLS, metrics: { listen: '0.0.0.0:9464', allow_remote: true } }).metrics).toEqual({ listen: '0.0.0.0:9464', allow_remote: true });
    for (const listen of ['9464', 'localhost', 'host:99999', 'http://127.0.0.1:9464']) {
      const r = configSchema.safeParse({ service: URLS, metrics: { listen } });
      expect(r.success, listen).toBe(false);
      expect(r.error!.issues[0]!.message).toContain('is not host:port');
    }
  });
});

describe('the Prometheus listener', () => {
  it('serves GET /metrics over TCP, and nothing else', async () => {
    const s = server('127.0.0.1:0');
    await s.start();
    const base = `http://127.0.0.1:${s.address()!.port}`;
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(await res.text()).toContain('terminal_agent_test_total 3');
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST', body: 'x' })).status).toBe(405);
    const head = await fetch(`${base}/metrics`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('answers a request that is not HTTP with 400 and why, even to a client still sending', async () => {
    const s = server('127.0.0.1:0');
    await s.start();
    const junk = `\x16\x03\x01 a TLS hello sent to plain HTTP ${'z'.repeat(300)}`;
    const { got } = await trickle({ port: s.address()!.port, host: '127.0.0.1' }, junk);
    expect(got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\nnot a valid HTTP\/1\.1 request: [^\n]+\n$/);
  });

  it('says why it cannot listen on a port that is taken', async () => {
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
    const port = (squatter.address() as { port: number }).port;
    try {
      const err = await server(`127.0.0.1:${port}`).start().catch((e: unknown) => e as Error);
      expect((err as Error).message).toBe(`cannot listen on metrics.listen 127.0.0.1:${port}: the port is taken by another program; choose another address or port`);
    } finally {
      squatter.close();
    }
  });
});
