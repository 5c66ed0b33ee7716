import {
  AuthError, BadRequestError, BadResponseError, NetworkError, NotFoundError, ServerError, ServiceError, TimeoutError,
} from '../errors.js';

// Turns what came back (a status and a body, or an exception from undici) into the typed errors of
// src/errors.ts. Error bodies are not shown in the spec: a message is taken from `message`,
// `return_message`, `detail` or `error` when the body is JSON, else from short plain text.

/** The fix for a certificate the agent does not trust (trust.ts says whom it trusts). */
export const PRIVATE_CA_FIX = "add the service's CA to the system's (a .crt file in /usr/local/share/ca-certificates/, then update-ca-certificates) or set service.ca_file to its PEM bundle";

/** Which credential a call carried, named the way the operator configures it. */
export type CredentialName = 'service.terminal_secret' | 'service.api_key' | undefined;

export interface ErrorContext {
  operation: string;
  /** e.g. `face 0123...`: what the call was about, for the message. */
  subject?: string;
  credential: CredentialName;
  /** Values to scrub from anything the server echoes back. */
  secrets: readonly string[];
}

const MAX_MESSAGE = 300;

export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[REDACTED]');
  return out;
}

/** The server's own message from an error or success body, when there is one. */
export function serverMessageOf(body: string, secrets: readonly string[]): string | undefined {
  const text = body.trim();
  if (!text) return undefined;
  let msg: string | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') {
      const o = parsed as Record<string, unknown>;
      for (const key of ['message', 'return_message', 'detail', 'error']) {
        const v = o[key];
        if (typeof v === 'string' && v) { msg = v; break; }
        // FastAPI-style `detail: [{msg}]` and `error: {message}` shapes.
        if (v && typeof v === 'object') { msg = JSON.stringify(v); break; }
      }
    } else if (typeof parsed === 'string') {
      msg = parsed;
    }
  } catch {
    // Plain text (or HTML from a proxy): keep its first line.
    if (!text.startsWith('<')) msg = text.split('\n')[0];
  }
  if (msg === undefined) return undefined;
  const clean = scrub(msg, secrets).replace(/\s+/g, ' ').trim();
  return clean.length > MAX_MESSAGE ? `${clean.slice(0, MAX_MESSAGE)}...` : clean;
}

function where(ctx: ErrorContext): string {
  return ctx.subject ? `${ctx.operation} (${ctx.subject})` : ctx.operation;
}

/** A non-2xx response as a typed error. */
export function errorForStatus(ctx: ErrorContext, status: number, serverMessage: string | undefined, retryAfterMs?: number): ServiceError {
  const said = serverMessage ? `: ${serverMessage}` : '';
  const base = { status, serverMessage, operation: ctx.operation, details: { status, operation: ctx.operation } };
  let err: ServiceError;
  if (status === 401 || status === 403) {
    const fix = ctx.credential
      ? `the service refused ${ctx.credential}; check the value in the config (or its *_file, $CREDENTIALS_DIRECTORY, TERMINAL_AGENT_${ctx.credential === 'service.api_key' ? 'API_KEY' : 'TERMINAL_SECRET'})`
      : 'the service wants a credential for this call; set service.other_auth to terminal_secret or api_key';
    err = new AuthError(`${where(ctx)}: HTTP ${status} credentials refused${said}; ${fix}`, base);
  } else if (status === 404) {
    err = new NotFoundError(`${where(ctx)}: not found (HTTP 404)${said}`, base);
  } else if (status === 429 || status >= 500) {
    err = new ServerError(`${where(ctx)}: service unavailable (HTTP ${status})${said}`, base);
  } else if (status >= 400) {
    err = new BadRequestError(`${where(ctx)}: request refused (HTTP ${status})${said}`, base);
  } else {
    err = new BadResponseError(`${where(ctx)}: unexpected HTTP ${status}${said}`, base);
  }
  err.retryAfterMs = retryAfterMs;
  return err;
}

/**
 * A 3xx. The agent follows no redirect (undici's request() follows none): a redirect
 * to another host would otherwise carry the Bearer credential there.
 */
export function redirectError(ctx: ErrorContext, status: number, location: string | undefined, requestUrl: URL): BadResponseError {
  let target = 'no Location';
  try {
    if (location) {
      const to = new URL(location, requestUrl);
      target = to.host === requestUrl.host ? `${to.host}${scrub(to.pathname, ctx.secrets)}` : `another host, ${to.host}`;
    }
  } catch {
    target = 'an invalid Location';
  }
  const fix = ctx.operation.includes('/faces') ? 'service.face_base_url' : 'service.base_url';
  return new BadResponseError(
    `${where(ctx)}: the service redirected to ${target} (HTTP ${status}); the agent follows no redirect, so its credential never goes elsewhere: if the service has moved, set ${fix} to the new address`,
    { status, operation: ctx.operation, details: { status, operation: ctx.operation } },
  );
}

/** A 2xx whose body carries a non-zero `code`/`return_code`. */
export function errorForCode(ctx: ErrorContext, status: number, code: number, serverMessage: string | undefined): ServiceError {
  return new BadResponseError(
    `${where(ctx)}: the service answered code ${code}${serverMessage ? `: ${serverMessage}` : ''}`,
    { status, serverMessage, operation: ctx.operation, details: { status, operation: ctx.operation, serviceCode: code } },
  );
}

export function badResponse(ctx: ErrorContext, status: number, what: string, cause?: unknown): BadResponseError {
  return new BadResponseError(`${where(ctx)}: unexpected answer from the service: ${what}`, {
    status, operation: ctx.operation, cause, details: { status, operation: ctx.operation },
  });
}

/** A connect that takes too long (undici's code). */
export const CONNECT_TIMEOUT_CODE = 'UND_ERR_CONNECT_TIMEOUT';

// Errors raised before a single byte of the request left: repeating a POST after these is safe.
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  CONNECT_TIMEOUT_CODE,
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

function codesOf(err: unknown, depth = 0): string[] {
  if (!err || typeof err !== 'object' || depth > 4) return [];
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  const own = typeof e.code === 'string' ? [e.code] : [];
  const nested = Array.isArray(e.errors) ? e.errors.flatMap((x) => codesOf(x, depth + 1)) : [];
  return [...own, ...nested, ...codesOf(e.cause, depth + 1)];
}

/**
 * Answers undici refuses as no HTTP/1.1 server may send them, besides llhttp's own refusals
 * (HTTPParserError, code HPE_*: a malformed status line, an invalid header, a bad chunk):
 * a head over 16 KB, a body longer or shorter than its Content-Length (two lengths, a length that
 * is not a number), a 100 Continue it did not ask for ('bad response') or an upgrade ('bad upgrade').
 */
const PROTOCOL_CODES = new Set(['UND_ERR_HEADERS_OVERFLOW', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH']);
const PROTOCOL_SOCKET_MESSAGES = new Set(['bad response', 'bad upgrade']);

function isProtocolError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = String((err as { code?: unknown }).code ?? '');
  return err.name === 'HTTPParserError' || /^HPE_/.test(code) || PROTOCOL_CODES.has(code)
    || (code === 'UND_ERR_SOCKET' && PROTOCOL_SOCKET_MESSAGES.has(err.message))
    // undici's parser asserts that a 101 (Switching Protocols) answers a request for an upgrade:
    // one that came unasked ends the exchange with node's AssertionError.
    || (code === 'ERR_ASSERTION' && /\bassert\(upgrade\)/.test(err.message));
}

/** An exception thrown by the transport (or by our deadline) as a typed error. */
export function errorForException(ctx: ErrorContext, err: unknown, timeoutMs: number, timedOut: boolean): ServiceError {
  if (err instanceof ServiceError) return err;
  const codes = codesOf(err);
  const base = { operation: ctx.operation, cause: err, details: { operation: ctx.operation, errno: codes[0] } };
  if (timedOut || codes.some((c) => TIMEOUT_CODES.has(c))) {
    return new TimeoutError(`${where(ctx)}: no complete answer within ${timeoutMs} ms; the service or the network is slow (service.request_timeout)`, base);
  }
  if (isProtocolError(err)) {
    const what = (err as { code?: unknown }).code === 'ERR_ASSERTION' ? 'a switch of protocols nobody asked for' : (err as Error).message;
    return new NetworkError(`${where(ctx)}: the service's answer breaks HTTP (${what}); the server is at fault, not the network`, {
      ...base, details: { ...base.details, protocolError: true },
    });
  }
  const notSent = codes.length > 0 && codes.every((c) => NOT_SENT_CODES.has(c));
  // undici's own codes (UND_ERR_*) name its classes; the operator reads what happened instead
  // ("other side closed", "Connect Timeout Error ..."). System codes (ECONNREFUSED) say it themselves.
  const reason = codes[0] && !codes[0].startsWith('UND_ERR_') ? codes[0] : err instanceof Error ? err.message : String(err);
  const tls = codes.find((c) => /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(c));
  const hint = codes.includes('ENOTFOUND') || codes.includes('EAI_AGAIN')
    ? 'the host name does not resolve; check the base URL and DNS'
    : tls
      ? `the service's TLS certificate is not trusted or does not match the host; for a private CA, ${PRIVATE_CA_FIX}`
      : notSent
        ? 'the service cannot be reached; check the base URL, the network and any proxy (HTTPS_PROXY/NO_PROXY)'
        : 'the connection broke during the exchange';
  return new NetworkError(`${where(ctx)}: network error (${reason}): ${hint}`, { ...base, notSent });
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  const trimmed = v.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
