import { Readable } from 'node:stream';
import { Agent, EnvHttpProxyAgent, type Dispatcher } from 'undici';
import { resumingConnector } from './tls-sessions.js';
import type { StreamBody, Target, Transport, TransportRequest, TransportResponse } from './transport.js';
import { secureContextFor, type TlsOptions } from './trust.js';

// The client's HTTP on undici: one Dispatcher for every request of a client, an Agent, or an
// EnvHttpProxyAgent when a proxy is configured (CONNECT tunnels for https, NO_PROXY honoured).
// What the client relies on it for: a keep-alive pool per origin (idle connections closed after
// 4 s, sooner when the server's Keep-Alive says so), the connect timeout, TLS sessions resumed,
// TCP_NODELAY, llhttp's strict reading of every answer (refusals come as HPE_* codes, which
// error-mapping.ts reads as "the answer breaks HTTP"), header values checked before they are
// written, and no redirect followed (request() has none). The deadline of a whole exchange is
// http-core's, through the request's signal.

export interface UndiciTransportOptions {
  /** Trusted roots and cipher order for https, or undefined for node's. */
  tls?: TlsOptions | undefined;
  connectTimeoutMs: number;
  /** Empty when not set: undici must not fall back to process.env. */
  httpProxy: string;
  httpsProxy: string;
  noProxy: string;
}

function dispatcherFor(options: UndiciTransportOptions): Dispatcher {
  // One TLS context for every connection (trust.ts): tls.connect's own option, which undici passes
  // on, for the tunnel's TLS and for an https:// proxy's alike.
  const tls = options.tls ? { secureContext: secureContextFor(options.tls) } : {};
  const connectOptions = { timeout: options.connectTimeoutMs, ...tls };
  // One connector for every origin, which holds the TLS sessions (tls-sessions.ts): given
  // options instead, the Agent builds a connector for each pool it makes, and it makes a new pool
  // whenever the last connection to an origin has closed.
  const connect = resumingConnector(connectOptions);
  if (!options.httpProxy && !options.httpsProxy) return new Agent({ connect });
  return new EnvHttpProxyAgent({
    connect,
    httpProxy: options.httpProxy,
    httpsProxy: options.httpsProxy,
    noProxy: options.noProxy,
    // The proxy's connection and the tunnel through it: a connector (and a session cache) each.
    requestTls: connectOptions,
    proxyTls: connectOptions,
  });
}

/** What undici sends: bytes as they are, a file part (files over 256 KB) as a stream that reads it. */
function bodyOf(body: TransportRequest['body']): Dispatcher.DispatchOptions['body'] {
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) return body;
  return Readable.from((body as StreamBody).chunks(), { objectMode: false });
}

export function undiciTransport(options: UndiciTransportOptions): Transport {
  const dispatcher = dispatcherFor(options);
  return {
    async request({ base, path }: Target, r: TransportRequest): Promise<TransportResponse> {
      const res = await dispatcher.request({
        origin: base.origin,
        path,
        method: r.method as Dispatcher.HttpMethod,
        headers: r.headers,
        body: bodyOf(r.body),
        signal: r.signal,
        // Bounds on each wait, besides http-core's deadline on the whole exchange: a paced
        // stream (TTS audio) has no deadline once its headers are in.
        headersTimeout: r.timeoutMs,
        bodyTimeout: r.timeoutMs,
      });
      return { statusCode: res.statusCode, headers: res.headers, body: res.body };
    },
    async close() {
      await dispatcher.close().catch(() => dispatcher.destroy());
    },
  };
}
