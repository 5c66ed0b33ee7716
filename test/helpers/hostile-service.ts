import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { onTestFinished } from 'vitest';
import { createServiceClient } from '../../src/client/service-client.js';
import type { ServiceClient } from '../../src/client/types.js';
import { createLogger } from '../../src/log/logger.js';
import { TEST_TERMINAL_SECRET, makeTestConfig } from './config.js';
import type { AgentConfig } from '../../src/config/schema.js';

// A small service that misbehaves on purpose (node:http on loopback): the emulator is well-behaved
// by design, and these tests need answers no honest service gives (a body that drips, a listing
// that never ends, a redirect elsewhere, bytes that are not UTF-8). Each test writes its routes.

export type Route = (req: IncomingMessage, res: ServerResponse) => unknown;

export interface SeenRequest {
  method: string;
  path: string;
  authorization: string | undefined;
}

export interface HostileService {
  /** http://HOST:PORT */
  url: string;
  faceBaseUrl: string;
  requests: SeenRequest[];
  /** Bytes written to response bodies so far (what a client made the server send). */
  bytesSent: number;
  close(): Promise<void>;
}

/** Starts a server on `host` (127.0.0.1 unless given) that answers with `routes[path]`, else 404. */
export async function startHostileService(routes: Record<string, Route> | ((path: string) => Route | undefined), host = '127.0.0.1'): Promise<HostileService> {
  const sockets = new Set<Socket>();
  const svc: HostileService = { url: '', faceBaseUrl: '', requests: [], bytesSent: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    svc.requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization });
    const write = res.write.bind(res);
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) svc.bytesSent += Buffer.byteLength(chunk as string);
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof res.write;
    const route = typeof routes === 'function' ? routes(path) : routes[path];
    if (!route) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no such route"}');
      return;
    }
    Promise.resolve(route(req, res)).catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  const { port } = server.address() as AddressInfo;
  svc.url = `http://${host}:${port}`;
  svc.faceBaseUrl = `${svc.url}/v1/api`;
  svc.close = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  });
  onTestFinished(() => svc.close());
  return svc;
}

/**
 * Writes `bytes` one chunk of `size` every `everyMs`, forever unless the bytes run out; stops when
 * the client leaves. Returns how many bytes it has written: a clock that stops when the machine
 * does (a test VM paused for a snapshot makes any wall-clock bound fail; this count does not move).
 */
export function drip(res: ServerResponse, bytes: Buffer | (() => Buffer), everyMs: number, size = 1): { sent(): number } {
  let sent = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    const chunk = typeof bytes === 'function' ? bytes() : bytes.subarray(sent, sent + size);
    if (chunk.length === 0) {
      clearInterval(timer);
      res.end();
      return;
    }
    sent += chunk.length;
    res.write(chunk);
  }, everyMs);
  res.on('close', () => clearInterval(timer));
  return { sent: () => sent };
}

export interface ClientRig {
  client: ServiceClient;
  config: AgentConfig;
  logLines: Array<Record<string, unknown>>;
}

/** The real client pointed at `svc`, with the given request_timeout and retries. */
export function clientFor(svc: { url: string; faceBaseUrl: string }, service: { request_timeout?: number; retries?: number } = {}, stateDir?: string): ClientRig {
  const config = makeTestConfig({
    ...(stateDir ? { state_dir: stateDir } : {}),
    service: { base_url: svc.url, face_base_url: svc.faceBaseUrl, terminal_secret: TEST_TERMINAL_SECRET, request_timeout: service.request_timeout ?? 1_000, retries: service.retries ?? 0 },
    faces: { sync_interval: 60_000, image_recheck_interval: 3_600_000, download_concurrency: 4 },
  });
  const logLines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n')) if (l) logLines.push(JSON.parse(l)); cb(); } });
  const logger = createLogger({ level: 'debug', destination: sink });
  const client = createServiceClient({ config: config.service, logger, userAgent: 'test', backoff: { initialMs: 5, maxMs: 10 } });
  onTestFinished(() => client.close());
  return { client, config, logLines };
}

export function json(res: ServerResponse, value: unknown, status = 200): void {
  const body = Buffer.from(JSON.stringify(value));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
}
