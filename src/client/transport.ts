import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, EnvHttpProxyAgent, type Dispatcher } from 'undici';
import { ConfigError } from '../errors.js';

// The connection side of the client: proxy from the environment the caller passes in (never
// process.env), an extra CA appended to Node's roots, and the rule that a secret never crosses a
// network in clear.

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

export function createDispatcher(config: ServiceConfig, env: ProxyEnv, timeoutMs: number): Dispatcher {
  let tls: { ca: string[] } | undefined;
  if (config.ca_file) {
    let pem: string;
    try {
      pem = readFileSync(config.ca_file, 'utf8');
    } catch (err) {
      throw new ConfigError([{ path: 'service.ca_file', message: `cannot read ${config.ca_file} (${(err as NodeJS.ErrnoException).code ?? 'error'}); give a readable PEM file or ""` }], { cause: err });
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new ConfigError([{ path: 'service.ca_file', message: `${config.ca_file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)` }]);
    }
    // `ca` replaces Node's roots: keep them, so a private CA only adds trust.
    tls = { ca: [...rootCertificates, pem] };
  }
  const common = {
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: { timeout: Math.min(timeoutMs, 10_000), ...(tls ?? {}) },
  };
  const httpsProxy = env.HTTPS_PROXY ?? env.https_proxy ?? '';
  const httpProxy = env.HTTP_PROXY ?? env.http_proxy ?? '';
  if (!httpsProxy && !httpProxy) return new Agent(common);
  // Empty strings, not undefined: EnvHttpProxyAgent would fall back to process.env otherwise.
  return new EnvHttpProxyAgent({
    ...common,
    httpProxy,
    httpsProxy,
    noProxy: env.NO_PROXY ?? env.no_proxy ?? '',
    ...(tls ? { requestTls: tls, proxyTls: tls } : {}),
  });
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
