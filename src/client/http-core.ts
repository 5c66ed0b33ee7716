import { AbortedError, ConfigError, InvalidInputError, NetworkError, ProgramReplacedError, ServiceError, describeError, isProgramReplaced } from '../errors.js';
import { backoffDelay, wait } from '../util/backoff.js';
import type { CallOptions, RequestEvent, StreamedBody } from './types.js';
import {
  badResponse, errorForCode, redirectError, errorForException, errorForStatus, parseRetryAfter, serverMessageOf,
  type CredentialName, type ErrorContext,
} from './error-mapping.js';
import { abortRelay, checkBaseUrl, type Target, type Transport, type TransportRequest } from './transport.js';
import type { EncodedBody } from './multipart.js';
import { MAX_BUFFERED_BYTES, decodeUtf8, readCapped } from './body-limits.js';
import { readLimited, streamed } from './response-body.js';
import type { ServiceClientDeps } from './service-client.js';

// One place that sends a request: base URL and credential, a deadline per attempt, status and
// `code` checks, retries (GET/PUT/DELETE; POST only when nothing reached the server) with backoff
// and Retry-After, and bodies always consumed or cancelled.

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RequestSpec {
  /** Stable, id-free name for logs and metrics: `GET /faces/{face_id}`. */
  operation: string;
  /** What the call is about, for error messages: `face 0123...`. */
  subject?: string;
  base: 'face' | 'service';
  method: Method;
  /** Path below the base URL, already encoded. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** terminal_secret / api_key are required; `other` follows service.other_auth. */
  auth: 'terminal_secret' | 'api_key' | 'other';
  headers?: Record<string, string>;
  /** Built again for every attempt (a file part is read from disk as it is sent). */
  body?: () => string | EncodedBody | Promise<string | EncodedBody>;
  /** Statuses besides 2xx that are an answer, not an error (304). */
  alsoOk?: number[];
  /**
   * How a streamed body is bounded. 'deadline' (the default): the whole exchange, body included,
   * within the call's timeout. 'pace': for audio a player consumes at its own speed, the body must
   * deliver PACE_MIN_BYTES per timeout spent waiting on the network (see `paced`).
   */
  streamLimit?: 'deadline' | 'pace';
  /** Largest buffered (non-streamed) answer, bytes; default MAX_BUFFERED_BYTES. */
  maxBytes?: number;
  opts?: CallOptions | undefined;
}

export interface BufferedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body when it is JSON, else undefined. */
  json: unknown;
  /** The body was not valid UTF-8: `text` holds U+FFFD where the bad bytes were. */
  invalidUtf8: boolean;
}

/** The client's own settings (service-client.ts says what each is), and the transport it sends through. */
export interface HttpCoreDeps extends Pick<ServiceClientDeps, 'config' | 'logger' | 'userAgent' | 'onRequest' | 'onProgramReplaced' | 'backoff' | 'maxRetryAfterMs'> {
  transport: Transport;
}

export interface HttpCore {
  send(spec: RequestSpec): Promise<BufferedResponse>;
  open(spec: RequestSpec): Promise<StreamedBody>;
  errorContext(spec: RequestSpec): ErrorContext;
}

const IDEMPOTENT: ReadonlySet<Method> = new Set(['GET', 'PUT', 'DELETE']);
const ERROR_BODY_LIMIT = 64 * 1024;

export function createHttpCore(deps: HttpCoreDeps): HttpCore {
  const { config, transport, logger } = deps;
  const policy = deps.backoff ?? { initialMs: 250, maxMs: 8_000 };
  const maxRetryAfter = deps.maxRetryAfterMs ?? 60_000;
  const secrets = [config.terminal_secret, config.api_key].filter((s): s is string => !!s);
  const bases = new Map<string, { url: URL; prefix: string }>();
  const whenAborted = abortRelay();

  /** The base URL, checked and parsed once; `prefix` is its path without the trailing slash. */
  function baseOf(which: RequestSpec['base']): { url: URL; prefix: string } {
    const key = which === 'face' ? 'service.face_base_url' : 'service.base_url';
    let base = bases.get(key);
    if (!base) {
      const url = checkBaseUrl(key, which === 'face' ? config.face_base_url : config.base_url, config.allow_insecure_http);
      base = { url, prefix: url.pathname.replace(/\/+$/, '') };
      bases.set(key, base);
    }
    return base;
  }

  function credential(auth: RequestSpec['auth']): { name: CredentialName; value?: string } {
    const kind = auth === 'other' ? config.other_auth : auth;
    if (kind === 'none') return { name: undefined };
    const value = kind === 'terminal_secret' ? config.terminal_secret : config.api_key;
    const name = kind === 'terminal_secret' ? 'service.terminal_secret' : 'service.api_key';
    if (!value) {
      const file = kind === 'terminal_secret' ? 'terminal_secret' : 'api_key';
      throw new ConfigError([{
        path: name,
        message: `not set, and this call needs it: set service.${file}_file (or service.${file}, $CREDENTIALS_DIRECTORY/${file}, TERMINAL_AGENT_${file.toUpperCase()})`,
      }]);
    }
    return { name, value };
  }

  function errorContext(spec: RequestSpec): ErrorContext {
    const kind = spec.auth === 'other' ? config.other_auth : spec.auth;
    const name: CredentialName = kind === 'terminal_secret' ? 'service.terminal_secret' : kind === 'api_key' ? 'service.api_key' : undefined;
    return { operation: spec.operation, subject: spec.subject, credential: name, secrets };
  }

  /** Where a call goes: the parsed base and the path with its query (no URL parsed per call). */
  function targetOf(spec: RequestSpec): Target {
    const base = baseOf(spec.base);
    let path = `${base.prefix}${spec.path}`;
    if (spec.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(spec.query)) if (v !== undefined) q.set(k, String(v));
      const qs = q.toString();
      if (qs) path += `?${qs}`;
    }
    return { base: base.url, path };
  }

  /**
   * Runs `attempt` with retries. Each attempt gets its own deadline (service.request_timeout or
   * opts.timeoutMs); `stream` attempts stop the deadline once the headers are in.
   */
  async function withRetries<T>(spec: RequestSpec, stream: boolean): Promise<T> {
    const ctx = errorContext(spec);
    const cred = credential(spec.auth);
    const url = targetOf(spec);
    const caller = spec.opts?.signal;
    const timeoutMs = spec.opts?.timeoutMs ?? config.request_timeout;
    const maxRetries = spec.opts?.retries ?? config.retries;
    const headers: Record<string, string> = { 'user-agent': deps.userAgent, accept: '*/*', ...(spec.headers ?? {}) };
    if (cred.value) headers.authorization = `Bearer ${cred.value}`;

    for (let attempt = 0; ; attempt++) {
      if (caller?.aborted) throw new AbortedError(`${spec.operation}: cancelled`, { cause: caller.reason });
      const started = performance.now();
      try {
        const result = await once(spec, ctx, url, headers, timeoutMs, stream);
        report(spec, attempt, started, 'ok', result.status);
        return result as T;
      } catch (raw) {
        if (!(raw instanceof ServiceError)) throw raw;
        const err = raw;
        const mayRepeat = IDEMPOTENT.has(spec.method) || (err instanceof NetworkError && err.notSent);
        let delay = err.retryAfterMs ?? backoffDelay(policy, attempt);
        // A part of the program found gone stays gone: no retry brings it back.
        const retry = err.retryable && mayRepeat && attempt < maxRetries && delay <= maxRetryAfter && !(err instanceof ProgramReplacedError);
        report(spec, attempt, started, retry ? 'retry' : 'error', err.status, err.code);
        if (!retry) throw err;
        delay = Math.max(0, delay);
        logger.debug({ operation: spec.operation, attempt, delayMs: delay, code: err.code, status: err.status }, 'retrying');
        if (!(await wait(delay, caller))) throw new AbortedError(`${spec.operation}: cancelled`, { cause: caller?.reason });
      }
    }
  }

  async function once(
    spec: RequestSpec, ctx: ErrorContext, url: Target, headers: Record<string, string>, timeoutMs: number, stream: boolean,
  ): Promise<BufferedResponse | StreamedBody> {
    const exchange = new AbortController();
    const caller = spec.opts?.signal;
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; exchange.abort(); }, timeoutMs);
    const forget = caller ? whenAborted(caller, () => exchange.abort()) : undefined;
    const cleanup = () => { clearTimeout(timer); forget?.(); };
    let handedOver = false;
    let body: string | EncodedBody | undefined;
    try {
      body = spec.body ? await spec.body() : undefined;
    } catch (err) {
      cleanup();
      throw new InvalidInputError(`${spec.operation}: cannot prepare the request body (${(err as NodeJS.ErrnoException).code ?? describeError(err)})`, { cause: err });
    }
    try {
      const res = await transport.request(url, { method: spec.method, ...withBody(headers, body), signal: exchange.signal, timeoutMs });
      const ok = (res.statusCode >= 200 && res.statusCode < 300) || (spec.alsoOk ?? []).includes(res.statusCode);
      if (!ok && res.statusCode >= 300 && res.statusCode < 400) {
        res.body.on('error', () => {}).destroy();
        const loc = res.headers.location;
        throw redirectError(ctx, res.statusCode, Array.isArray(loc) ? loc[0] : loc, new URL(url.path, url.base));
      }
      if (!ok) {
        const text = await readLimited(res.body, ERROR_BODY_LIMIT);
        throw errorForStatus(ctx, res.statusCode, serverMessageOf(text, ctx.secrets), parseRetryAfter(res.headers['retry-after']));
      }
      if (stream) {
        // 'deadline': the timer keeps running over the body; it is cleared when the body closes.
        if (spec.streamLimit === 'pace') clearTimeout(timer);
        handedOver = true;
        return streamed(res, ctx, timeoutMs, caller, cleanup, () => timedOut, spec.streamLimit === 'pace');
      }
      const limit = spec.maxBytes ?? MAX_BUFFERED_BYTES;
      const raw = await readCapped(res.body, limit);
      if (raw === undefined) {
        throw badResponse(ctx, res.statusCode, `the answer is larger than ${limit} bytes, the most the agent reads; it stopped reading there`);
      }
      const { text, invalidUtf8 } = decodeUtf8(raw);
      const json = parseJson(text, String(res.headers['content-type'] ?? ''));
      checkCode(ctx, res.statusCode, json);
      return { status: res.statusCode, headers: res.headers, text, json, invalidUtf8 };
    } catch (err) {
      // A file part that could not be read, or changed, while it was sent: not the network's fault.
      if (err instanceof InvalidInputError) throw err;
      if (isProgramReplaced(err)) throw programGone(spec.operation, err);
      if (caller?.aborted && !(err instanceof ServiceError)) {
        throw new AbortedError(`${spec.operation}: cancelled`, { cause: caller.reason });
      }
      throw errorForException(ctx, err, timeoutMs, timedOut);
    } finally {
      if (!handedOver) cleanup();
    }
  }

  /**
   * The transport's code (undici) is read at the first request: its file gone means another
   * build was installed under this process. Nothing was sent, so an upload stays
   * queued (retryable, not sent); the owner is told (the daemon stops and restarts on it).
   */
  function programGone(operation: string, err: unknown): ProgramReplacedError {
    deps.onProgramReplaced?.(err, operation);
    return new ProgramReplacedError(`${operation}: not sent: ${describeError(err)}`, {
      operation, cause: err, notSent: true, details: { operation, errno: (err as NodeJS.ErrnoException).code ?? 'MODULE_NOT_FOUND' },
    });
  }

  function report(spec: RequestSpec, attempt: number, started: number, outcome: RequestEvent['outcome'], status?: number, errorCode?: string): void {
    const event: RequestEvent = {
      operation: spec.operation, method: spec.method, status, durationMs: performance.now() - started, attempt, outcome,
      ...(errorCode ? { errorCode } : {}),
    };
    logger.debug(event, 'service request');
    try {
      deps.onRequest?.(event);
    } catch (err) {
      logger.warn({ err }, 'onRequest listener failed');
    }
  }

  return {
    send: (spec) => withRetries<BufferedResponse>(spec, false),
    open: (spec) => withRetries<StreamedBody>(spec, true),
    errorContext,
  };
}

function parseJson(text: string, contentType: string): unknown {
  const t = text.trim();
  if (!t || !(contentType.includes('json') || t.startsWith('{') || t.startsWith('['))) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** A 2xx with a non-zero `code`/`return_code` is a failure (spec-notes.md). */
export function checkCode(ctx: ErrorContext, status: number, json: unknown): void {
  if (!json || typeof json !== 'object' || Array.isArray(json)) return;
  const o = json as Record<string, unknown>;
  for (const key of ['code', 'return_code']) {
    const v = o[key];
    const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
    if (typeof n === 'number' && n !== 0) throw errorForCode(ctx, status, n, serverMessageOf(JSON.stringify(o), ctx.secrets));
  }
}

/** The attempt's headers with the body's type and length, and the bytes (or pieces) to send. */
function withBody(headers: Record<string, string>, body: string | EncodedBody | undefined): Pick<TransportRequest, 'headers' | 'body'> {
  if (body === undefined) return { headers };
  if (typeof body === 'string') return { headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body };
  return { headers: { ...headers, 'content-type': body.contentType, 'content-length': String(body.data.length) }, body: body.data };
}
