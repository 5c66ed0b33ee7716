import type { Readable } from 'node:stream';
import { ConfigError } from '../errors.js';
import { directTransport } from './direct-transport.js';
import { proxyTransport } from './proxy-transport.js';
import { readCaFile } from '../config/named-files.js';
import type { TlsOptions } from './trust.js';

// The connection side of the client: proxy from the environment the caller passes in (never
// process.env), whom TLS trusts (trust.ts), and the rule that a secret never crosses a
// network in clear. Direct connections go through direct-transport.ts (HTTP/1.1 on node:net and
// node:tls: less CPU per request than node:http's client, and about 3 MB of RSS against 14 to 20
// MB for undici); undici is loaded, on the first request, only when a proxy is configured (its
// EnvHttpProxyAgent does CONNECT tunnels and NO_PROXY).

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

/**
 * A body to send: text, bytes, bytes in pieces written one after the other (a multipart body
 * around an image held in memory, sent without copying the image into one buffer), or a stream.
 */
export type RequestBody = string | Buffer | readonly Buffer[] | StreamBody;

/** Its length in bytes (Content-Length). */
export function bodyLength(body: Exclude<RequestBody, string>): number {
  if (Buffer.isBuffer(body)) return body.length;
  if (Array.isArray(body)) return (body as readonly Buffer[]).reduce((n, b) => n + b.length, 0);
  return (body as StreamBody).length;
}

/**
 * Ends one exchange at any point (the deadline, the caller's signal). An AbortSignal would do, but
 * on Node 20 each EventTarget add/removeEventListener costs about 10 µs: several per request.
 */
export class Cancel {
  cancelled = false;
  private action: (() => void) | undefined;

  /** What cancelling does (the transport's); run at once if already cancelled. */
  onCancel(action: (() => void) | undefined): void {
    this.action = action;
    if (this.cancelled) action?.();
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.action?.();
  }
}

/**
 * `whenAborted(signal, action)`: runs `action` when `signal` aborts, and returns what forgets it.
 * One 'abort' listener per signal however many exchanges it covers: on Node 20 each EventTarget
 * add/removeEventListener costs about 10 µs, and the outbox loop passes the same signal to every
 * upload of a burst (two such calls per upload were 14 µs of CPU per file in a burst's profile).
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
  /** Cancelling destroys the request and, once it has come, the response body. */
  cancel: Cancel;
  /** The attempt's deadline, ms: bounds the connect (and, through undici, headers and gaps). */
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
  /** Closes pooled connections. */
  close(): Promise<void>;
}

/** Connect attempts give up after this long even when the request timeout is longer. */
const MAX_CONNECT_MS = 10_000;

/** `ciphers`: the TLS cipher list to offer (tls-ciphers.ts), or undefined for node's. */
export function createTransport(config: ServiceConfig, env: ProxyEnv, timeoutMs: number, ciphers?: string): Transport {
  // Read now, so a bad ca_file is a config error at start, not a failure at the first request.
  const extraCa = config.ca_file ? readCaFile(config.ca_file) : undefined;
  const tls: TlsOptions | undefined = extraCa || ciphers ? { extraCa, ciphers } : undefined;
  const connectTimeoutMs = Math.min(timeoutMs, MAX_CONNECT_MS);
  const httpsProxy = env.HTTPS_PROXY ?? env.https_proxy ?? '';
  const httpProxy = env.HTTP_PROXY ?? env.http_proxy ?? '';
  if (!httpsProxy && !httpProxy) return directTransport({ tls, connectTimeoutMs });
  return proxyTransport({ tls, connectTimeoutMs, httpProxy, httpsProxy, noProxy: env.NO_PROXY ?? env.no_proxy ?? '' });
}

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
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
