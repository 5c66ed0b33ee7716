import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setMaxListeners } from 'node:events';
import { chmod, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../log/logger.js';
import { AbortedError, UsageError } from '../errors.js';
import { makeDir } from '../util/make-dir.js';
import { answerClientErrors, unanswerable } from '../util/http-client-error.js';
import { removeStaleSocket } from './stale-socket.js';
import { MethodNotAllowed, RequestRefused, RouteNotFound, errorBody, httpStatusFor, isUnexpected } from './control-errors.js';
import type { EventStreamRequest, EventStreamResponse } from '../events/sse.js';

// HTTP over a unix socket, served by node:http: every program on the terminal can speak it (curl
// --unix-socket), access is the file mode (0660, the agent's group), and no TCP port is opened on
// the device. Every answer says `Connection: close`: callers are CLI commands, curl and scripts,
// one call a connection, and a client that asks and never reads gets one answer, not a queue.

export interface ControlHandlers {
  status(): Promise<unknown> | unknown;
  faces(): Promise<unknown> | unknown;
  /** POST /faces/sync; a body `{"face_id": ...}` asks for that one face at once (a `faces update`). */
  syncFaces(body?: Record<string, unknown>): Promise<unknown>;
  /** `signal` aborts when the caller hangs up before the answer. */
  say(body: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  enrollVoiceprint(body: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  metrics(): Promise<{ contentType: string; text: string }>;
  /** GET /events: a Server-Sent Events stream that lasts until the caller or `signal` ends it. */
  events?(req: EventStreamRequest, res: EventStreamResponse, signal: AbortSignal): void;
}

export interface ControlServer {
  readonly socketPath: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface ControlServerOptions {
  socketPath: string;
  handlers: ControlHandlers;
  logger: Logger;
  /** How long stop() lets a request being answered finish (a voiceprint upload), ms; default 5 s. */
  drainMs?: number;
}

const MAX_BODY = 64 * 1024;
// Bounds against a stuck or hostile local client (the socket is open to the agent's group):
// - a client has 5 s to send its request head (at most 16 KB) and 30 s for the whole request
//   (bodies are at most 64 KB), else it is answered 408 (431, 413). Node checks these every
//   CHECK_MS, so a slow client is cut off between 5 and 7 s. How long the answer takes (a phrase
//   to say, a recording) is not bounded here: it ends with the work, or when the caller hangs up.
// - at most 2048 connections at once (the unit's LimitNOFILE is 4096: uploads and agent.db keep
//   theirs); further connections are closed at once.
// - /metrics is computed at most once a second, however often it is asked for.
export const CONTROL_HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 30_000;
const HEAD_MAX_BYTES = 16 * 1024;
const CHECK_MS = 2_000;
export const CONTROL_MAX_CONNECTIONS = 2048;
const METRICS_CACHE_MS = 1_000;
const IDLE_CLOSE_MS = 5_000;
// Longest usable sun_path on Linux (108 bytes with the terminating NUL).
const MAX_SOCKET_PATH = 107;
const ENDPOINTS = 'GET /status, GET /faces, POST /faces/sync, POST /say, POST /voiceprint/enroll, GET /metrics, GET /events';

export function createControlServer(options: ControlServerOptions): ControlServer {
  const { socketPath, handlers, logger } = options;
  let server: Server | undefined;
  let stopping: Promise<void> | undefined;
  // Ends the event streams at stop(): they never finish by themselves.
  const streams = new AbortController();
  // One listener per open stream: many programs may follow the stream at once.
  setMaxListeners(0, streams.signal);
  const served = new WeakSet<object>();
  let metricsCache: { at: number; value: Promise<{ contentType: string; text: string }> } | undefined;

  function metrics(): Promise<{ contentType: string; text: string }> {
    // Monotonic: a wall clock set back would serve the cached text until it caught up.
    const now = performance.now();
    if (!metricsCache || now - metricsCache.at >= METRICS_CACHE_MS) {
      const value = handlers.metrics();
      metricsCache = { at: now, value };
      value.catch(() => { metricsCache = undefined; });
    }
    return metricsCache.value;
  }

  // Everything that reads the request (its target included) runs inside the try: whatever the
  // caller sent, a failure is this request's answer, never the daemon's end.
  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    let route = `${req.method} (target not read)`;
    try {
      const path = pathOf(req.url);
      route = `${req.method} ${path}`;
      checkFraming(req);
      if (path === '/events' && handlers.events) {
        // An event stream has no head of its own to give: GET only.
        allow(req, path, 'GET', false);
        handlers.events(req, res, streams.signal);
        return;
      }
      if (path === '/metrics') {
        allow(req, path, 'GET');
        const m = await metrics();
        res.writeHead(200, { 'content-type': m.contentType, 'content-length': Buffer.byteLength(m.text) });
        res.end(m.text);
        return;
      }
      const gone = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) gone.abort(new Error('caller hung up'));
      });
      sendJson(res, 200, await answer(req, path, gone.signal));
    } catch (err) {
      if (isUnexpected(err)) logger.error({ err, route }, 'control request failed');
      else logger.debug({ route, code: (err as UsageError).code }, 'control request refused');
      // RFC 9110 15.5.6: a 405 names the methods the route takes.
      sendJson(res, httpStatusFor(err), errorBody(err), err instanceof MethodNotAllowed ? { allow: err.allowed } : {});
    } finally {
      logger.debug({ route, status: res.statusCode, ms: Math.round(performance.now() - started) }, 'control request');
    }
  }

  async function answer(req: IncomingMessage, path: string, signal: AbortSignal): Promise<unknown> {
    switch (path) {
      case '/status':
        allow(req, path, 'GET');
        return handlers.status();
      case '/faces':
        allow(req, path, 'GET');
        return handlers.faces();
      case '/faces/sync':
        allow(req, path, 'POST');
        return handlers.syncFaces(await jsonBody(req));
      case '/say':
        allow(req, path, 'POST');
        return handlers.say(await jsonBody(req), signal);
      case '/voiceprint/enroll':
        allow(req, path, 'POST');
        return handlers.enrollVoiceprint(await jsonBody(req), signal);
      default:
        throw new RouteNotFound(`no such control endpoint ${path}; the daemon serves ${ENDPOINTS}`);
    }
  }

  return {
    socketPath,
    async start() {
      if (server) return;
      if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
        throw new UsageError(`control.socket path ${socketPath} is longer than ${MAX_SOCKET_PATH} bytes, the limit for unix sockets; choose a shorter path`);
      }
      await makeDir(dirname(socketPath));
      await removeStaleSocket(socketPath, logger);
      const srv = createServer({
        headersTimeout: CONTROL_HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS,
        maxHeaderSize: HEAD_MAX_BYTES, connectionsCheckingInterval: CHECK_MS,
        // Checked in dispatch, to answer in the socket's own error shape.
        requireHostHeader: false,
      }, (req, res) => {
        // One request a connection: a second one sent in the same write (pipelined) is not run.
        if (unanswerable(req) || served.has(req.socket)) {
          req.resume();
          return;
        }
        served.add(req.socket);
        res.setHeader('connection', 'close');
        // dispatch answers its own errors; this catch is for a failure in answering one (a
        // header Node refuses to write): that connection ends, the daemon does not.
        dispatch(req, res).catch((err: unknown) => {
          logger.error({ err }, 'control request could not be answered');
          res.destroy();
        });
      });
      srv.maxConnections = CONTROL_MAX_CONNECTIONS;
      answerClientErrors(srv, (status, message) => ({ contentType: 'application/json', text: `${JSON.stringify(errorBody(new RequestRefused(status, message)))}\n` }));
      // Node's own answer to an Expect it does not know keeps the connection open, and has no body.
      srv.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
        res.setHeader('connection', 'close');
        sendJson(res, 417, errorBody(new RequestRefused(417, `Expect: ${req.headers.expect} is not supported; only 100-continue is`)));
      });
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        // Node's default backlog (511) makes the 512th simultaneous connect fail with EAGAIN on a
        // unix socket; the kernel caps this at net.core.somaxconn (4096 on current kernels).
        srv.listen({ path: socketPath, backlog: CONTROL_MAX_CONNECTIONS }, () => {
          srv.off('error', reject);
          resolve();
        });
      });
      // An accept that fails (EMFILE) must not take the daemon down; the client sees its connect fail.
      srv.on('error', (err) => logger.warn({ err }, 'control socket: a connection could not be accepted'));
      server = srv;
      await chmod(socketPath, 0o660);
      logger.info({ socket: socketPath }, 'control socket listening');
    },
    stop() {
      if (!server) return Promise.resolve();
      stopping ??= (async () => {
        const srv = server!;
        streams.abort();
        // Stop taking new connections; in-flight requests finish as their components drain.
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        srv.closeIdleConnections();
        const drainMs = options.drainMs ?? IDLE_CLOSE_MS;
        const timer = setTimeout(() => srv.closeAllConnections(), drainMs);
        await closed;
        clearTimeout(timer);
        await unlink(socketPath).catch(() => {});
      })();
      return stopping;
    },
  };
}

/** The path of a request target; a target that is no URL is the caller's 400. */
function pathOf(target: string | undefined): string {
  let url: URL;
  try {
    url = new URL(target ?? '/', 'http://control');
  } catch {
    throw new RequestRefused(400, 'the request target is not a valid URL; send a path such as /status');
  }
  return url.pathname;
}

/** What Node reads leniently and the socket refuses: no Host in HTTP/1.1, a body framing other than chunked. */
function checkFraming(req: IncomingMessage): void {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    throw new RequestRefused(400, 'an HTTP/1.1 request must have a Host header (curl sends one; so must other clients)');
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te.toLowerCase() !== 'chunked') {
    throw new RequestRefused(400, `Transfer-Encoding ${te} is not accepted; send the body with Content-Length or Transfer-Encoding: chunked`);
  }
}

/** The route takes `method` (and HEAD, where it is GET: the same answer, its body left out by Node). */
function allow(req: IncomingMessage, path: string, method: string, head = method === 'GET'): void {
  if (req.method === method || (head && req.method === 'HEAD')) return;
  const allowed = head ? `${method}, HEAD` : method;
  throw new MethodNotAllowed(`${path} takes ${allowed}, not ${req.method}`, allowed);
}

function sendJson(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = `${JSON.stringify(body ?? null)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

/** The request's body as a JSON object ({} when empty), refused past MAX_BODY bytes. */
async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const tooLarge = () => new RequestRefused(413, `the request body is larger than ${MAX_BODY} bytes, the most the control socket takes`);
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY) throw tooLarge();
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw tooLarge();
      parts.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof RequestRefused) throw err;
    throw new AbortedError('the caller hung up before its whole request body came', { cause: err });
  }
  const text = Buffer.concat(parts).toString('utf8').trim();
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`request body is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError('request body must be a JSON object');
  return value as Record<string, unknown>;
}
