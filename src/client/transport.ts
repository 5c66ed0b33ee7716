import type { Readable } from 'node:stream';
import { ConfigError } from '../errors.js';
import { readCaFile } from '../config/named-files.js';
import { isLoopbackHost } from '../config/plain-checks.js';
import type { UndiciTransportOptions } from './undici-transport.js';

// The connection side of the client: proxy from the environment the caller passes in (never
// process.env), whom TLS trusts (trust.ts), and the rule that a secret never crosses a network in
// clear. The HTTP itself is undici's (undici-transport.ts), imported at the first request: a CLI
// call that sends nothing never loads it, and the daemon loads it after READY.

/** The `service` slice of AgentConfig (src/config/schema.ts), restated so the client stands alone. */
export interface ServiceConfig {
  base_url: string;
  face_base_url: string;
  terminal_secret?: string;
  api_key?: string;
  request_timeout: number;
  ca_file: string;
  allow_insecure_http: boolean;
  retries: number;
  other_auth: 'none' | 'terminal_secret' | 'api_key';
}

/** The proxy variables the client honours; pass `ctx.env` or `process.env` from main. */
export type ProxyEnv = Partial<Record<'HTTPS_PROXY' | 'https_proxy' | 'HTTP_PROXY' | 'http_proxy' | 'NO_PROXY' | 'no_proxy', string>>;

/** A body of known length produced piece by piece (a file part read from disk). */
export interface StreamBody {
  length: number;
  chunks(): AsyncIterable<Buffer>;
}

/** A body to send: text, bytes, or a file part read from disk as it is sent. */
export type RequestBody = string | Buffer | StreamBody;

/**
 * `whenAborted(signal, action)`: runs `action` when `signal` aborts, and returns what forgets it.
 * One 'abort' listener per signal however many exchanges it covers: the outbox loop passes the
 * same signal to every upload of a burst, and on Node 20 each EventTarget add/removeEventListener
 * costs about 10 µs.
 */
export function abortRelay(): (signal: AbortSignal, action: () => void) => () => void {
  const actions = new WeakMap<AbortSignal, Set<() => void>>();
  return (signal, action) => {
    let set = actions.get(signal);
    if (!set) {
      const fresh = new Set<() => void>();
      set = fresh;
      actions.set(signal, fresh);
      signal.addEventListener('abort', () => {
        for (const a of [...fresh]) a();
      }, { once: true });
    }
    const mine = set;
    mine.add(action);
    return () => void mine.delete(action);
  };
}

export interface TransportRequest {
  method: string;
  /** Lower-case names; content-length is set by the caller when there is a body. */
  headers: Record<string, string>;
  body?: RequestBody | undefined;
  /** Aborting ends the exchange: the request, or once it has come, the response body. */
  signal: AbortSignal;
  /** The attempt's timeout, ms: bounds each wait for headers and for body bytes. */
  timeoutMs: number;
}

export interface TransportResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** Must be consumed or destroyed: that frees the connection. */
  body: Readable;
}

/** A request's address: the parsed base URL (scheme, host, port) and the path with its query. */
export interface Target {
  base: URL;
  path: string;
}

export interface Transport {
  request(target: Target, req: TransportRequest): Promise<TransportResponse>;
  /** Lets exchanges in flight finish, closes pooled connections, and refuses new requests. */
  close(): Promise<void>;
}

/** Connect attempts give up after this long even when the request timeout is longer. */
const MAX_CONNECT_MS = 10_000;

/** `ciphers`: the TLS cipher list to offer (tls-ciphers.ts), or undefined for node's. */
export function createTransport(config: ServiceConfig, env: ProxyEnv, timeoutMs: number, ciphers?: string): Transport {
  // Read now, so a bad ca_file is a config error at start, not a failure at the first request.
  const extraCa = config.ca_file ? readCaFile(config.ca_file) : undefined;
  const options: UndiciTransportOptions = {
    tls: extraCa || ciphers ? { extraCa, ciphers } : undefined,
    connectTimeoutMs: Math.min(timeoutMs, MAX_CONNECT_MS),
    httpsProxy: env.HTTPS_PROXY ?? env.https_proxy ?? '',
    httpProxy: env.HTTP_PROXY ?? env.http_proxy ?? '',
    noProxy: env.NO_PROXY ?? env.no_proxy ?? '',
  };
  let loading: Promise<Transport> | undefined;
  let closed = false;
  const load = () => loading ??= import('./undici-transport.js').then(({ undiciTransport }) => undiciTransport(options), (err: unknown) => {
    // Tried again at the next request (http-core tells a part of the program found gone).
    loading = undefined;
    throw err;
  });
  return {
    async request(target, req) {
      if (closed) throw Object.assign(new Error('The client is closed'), { code: 'UND_ERR_CLOSED' });
      return (await load()).request(target, req);
    },
    async close() {
      closed = true;
      // Never loaded, or its load failed (that failure was a request's): nothing to close.
      const loaded = await loading?.catch(() => undefined);
      await loaded?.close();
    },
  };
}

/** Refuses plain http:// to a non-loopback host unless the operator allowed it. */
export function checkBaseUrl(key: 'service.base_url' | 'service.face_base_url', value: string, allowInsecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch (err) {
    throw new ConfigError([{ path: key, message: `'${value}' is not a URL; write it as https://host[:port][/path]` }], { cause: err });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError([{ path: key, message: `'${url.protocol}' is not supported; use https://` }]);
  }
  if (url.protocol === 'http:' && !allowInsecure && !isLoopbackHost(url.hostname)) {
    throw new ConfigError([{
      path: key,
      message: `plain http:// to ${url.hostname} would send credentials in clear; use https:// or set service.allow_insecure_http: true`,
    }]);
  }
  return url;
}
