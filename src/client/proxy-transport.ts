import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { StreamBody, Target, Transport, TransportRequest, TransportResponse } from './transport.js';
import { secureContextFor, type TlsOptions } from './trust.js';

// Connections through HTTPS_PROXY/HTTP_PROXY (CONNECT tunnels for https, NO_PROXY honoured) with
// undici's EnvHttpProxyAgent. undici is imported on the first request: a daemon or CLI call with no
// proxy never loads it (about 14 MB of RSS and 60 ms of start-up on this machine).

export interface ProxyTransportOptions {
  /** Trusted roots and cipher order for https, or undefined for node's. */
  tls?: TlsOptions | undefined;
  connectTimeoutMs: number;
  httpProxy: string;
  httpsProxy: string;
  noProxy: string;
}

type Undici = typeof import('undici');

export function proxyTransport(options: ProxyTransportOptions): Transport {
  let loading: Promise<{ undici: Undici; dispatcher: Dispatcher }> | undefined;

  // `.default` (the CommonJS module.exports): the esbuild bundle gives a dynamically imported
  // CommonJS package no named exports; Node's own loader gives both.
  const load = () => loading ??= import('undici').then(({ default: undici }) => {
    // tls.connect's own option: undici passes its connect options on to it, for the tunnel's
    // TLS and for an https:// proxy's alike.
    const tls = options.tls ? { secureContext: secureContextFor(options.tls) } : undefined;
    // Empty strings, not undefined: EnvHttpProxyAgent would fall back to process.env otherwise.
    const dispatcher = new undici.EnvHttpProxyAgent({
      connect: { timeout: options.connectTimeoutMs, ...(tls ?? {}) },
      httpProxy: options.httpProxy,
      httpsProxy: options.httpsProxy,
      noProxy: options.noProxy,
      ...(tls ? { requestTls: tls, proxyTls: tls } : {}),
    });
    return { undici, dispatcher };
  }, (err: unknown) => {
    // Tried again at the next request (the chunk loader reads a file found gone again).
    loading = undefined;
    throw err;
  });

  async function request({ base, path }: Target, r: TransportRequest): Promise<TransportResponse> {
    const { undici, dispatcher } = await load();
    const ac = new AbortController();
    r.cancel.onCancel(() => ac.abort());
    const b = r.body;
    const body = b === undefined || typeof b === 'string' || Buffer.isBuffer(b) ? b : Array.isArray(b) ? Buffer.concat(b as readonly Buffer[]) : Readable.from((b as StreamBody).chunks());
    const res = await undici.request(new URL(path, base), {
      dispatcher, method: r.method as Dispatcher.HttpMethod, headers: r.headers, body, signal: ac.signal,
      headersTimeout: r.timeoutMs, bodyTimeout: r.timeoutMs,
    });
    return { statusCode: res.statusCode, headers: res.headers, body: res.body };
  }

  return {
    request,
    async close() {
      // Never loaded, or its load failed (that failure was the request's): nothing to close.
      const loaded = await loading?.catch(() => undefined);
      if (!loaded) return;
      await loaded.dispatcher.close().catch(() => loaded.dispatcher.destroy());
    },
  };
}
