import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log/logger.js';
import { parseListenAddress } from '../config/listen-address.js';
import { answerClientErrors, unanswerable } from '../util/http-client-error.js';

// GET /metrics over TCP for a Prometheus server (metrics.listen, off by default). The control
// socket serves the same text to programs on the terminal; this listener exists because Prometheus
// cannot scrape a unix socket. It answers nothing else, reads no body, and keeps few connections.

export interface MetricsServer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Where it listens once started (the real port when metrics.listen asked for port 0). */
  address(): { host: string; port: number } | undefined;
}

export interface MetricsServerOptions {
  listen: string;
  scrape(): Promise<{ contentType: string; text: string }>;
  logger: Logger;
}

/** A scraper or two, plus someone's curl: more than this is not Prometheus. */
const MAX_CONNECTIONS = 8;

export function createMetricsServer(o: MetricsServerOptions): MetricsServer {
  const addr = parseListenAddress(o.listen);
  if (!addr) throw new Error(`metrics.listen ${o.listen} is not host:port`); // the schema checked it
  let server: Server | undefined;

  function answer(req: IncomingMessage, res: ServerResponse): void {
    if (unanswerable(req)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('only GET /metrics\n');
      return;
    }
    if (pathOf(req.url) !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('terminal-agent serves GET /metrics here\n');
      return;
    }
    o.scrape().then((m) => {
      if (res.destroyed) return;
      res.writeHead(200, { 'content-type': m.contentType, 'content-length': Buffer.byteLength(m.text) });
      res.end(req.method === 'HEAD' ? undefined : m.text);
    }, (err: unknown) => {
      o.logger.error({ err }, 'collecting metrics failed');
      if (!res.destroyed) res.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed; see the agent log\n');
    }).catch((err: unknown) => {
      o.logger.error({ err }, 'metrics request could not be answered');
      res.destroy();
    });
  }

  return {
    async start() {
      if (server) return;
      // Whatever was sent, a failure is this request's answer, never the daemon's end.
      const srv = createServer((req, res) => {
        try {
          answer(req, res);
        } catch (err) {
          o.logger.error({ err }, 'metrics request failed');
          if (res.headersSent) res.destroy();
          else res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error; see the agent log\n');
        }
      });
      srv.maxConnections = MAX_CONNECTIONS;
      answerClientErrors(srv);
      srv.headersTimeout = 10_000;
      srv.requestTimeout = 10_000;
      srv.keepAliveTimeout = 30_000;
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(addr.port, addr.host, () => {
          srv.off('error', reject);
          resolve();
        });
      }).catch((err: NodeJS.ErrnoException) => {
        const why = err.code === 'EADDRINUSE' ? 'the port is taken by another program' : err.code === 'EADDRNOTAVAIL' ? 'no interface of this machine has that address' : err.code === 'EACCES' ? 'ports below 1024 need privileges the agent does not have' : err.message;
        throw new Error(`cannot listen on metrics.listen ${o.listen}: ${why}; choose another address or port`, { cause: err });
      });
      server = srv;
      o.logger.info({ listen: o.listen, port: (srv.address() as AddressInfo).port }, 'metrics listening for Prometheus');
    },
    async stop() {
      const srv = server;
      if (!srv) return;
      server = undefined;
      await new Promise<void>((resolve) => {
        srv.close(() => resolve());
        srv.closeAllConnections();
      });
    },
    address() {
      const a = server?.address() as AddressInfo | null | undefined;
      return a ? { host: a.address, port: a.port } : undefined;
    },
  };
}

/** The path of a request target; a target that is no URL (`http://[`) is answered 404 like any other path. */
function pathOf(target: string | undefined): string | undefined {
  try {
    return new URL(target ?? '/', 'http://metrics').pathname;
  } catch {
    return undefined;
  }
}
