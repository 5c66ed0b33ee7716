import { createServer, type Server, type Socket } from 'node:net';
import { setMaxListeners } from 'node:events';
import { chmod, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../log/logger.js';
import {
  AbortedError, AgentError, AuthError, BadRequestError, BusyError, ConfigError, InvalidInputError,
  NotFoundError, ServiceError, TimeoutError, UsageError, isAgentError,
} from '../errors.js';
import { makeDir } from '../util/make-dir.js';
import { removeStaleSocket } from './stale-socket.js';
import type { EventStreamRequest, EventStreamResponse } from '../events/sse.js';
import { serveConnection, type WireConnection, type WireRequest, type WireResponse } from './wire-connection.js';

// HTTP over a unix socket: every program on the terminal can speak it (curl --unix-socket), access
// is the file mode (0660, the agent's group), and no TCP port is opened on the device.
// The HTTP/1.1 is the agent's own (wire-connection.ts), on node:net: node:http's server and the
// modules it brings stayed resident in the daemon for good (0.7 MB of the idle daemon on the
// package's Node 24, 1 MB once it has served, r40), and its check of connections' timeouts woke the idle daemon every
// second, its only wake-up; this socket serves one small request a connection.

export interface ControlHandlers {
  status(): Promise<unknown> | unknown;
  faces(): Promise<unknown> | unknown;
  syncFaces(): Promise<unknown>;
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
// - a client has 5 s to send its request head (at most 16 KB, node:http's default) and 30 s for
//   the whole request (bodies are at most 64 KB), else it is answered 408 (431, 413). How long
//   the answer takes (a phrase to say, a recording) is not bounded here: it ends with the work,
//   or when the caller hangs up.
// - at most 2048 connections at once (the unit's LimitNOFILE is 4096: uploads and agent.db keep
//   theirs); further connections are closed at once.
// - /metrics is computed at most once a second, however often it is asked for.
// A client that asks and never reads stalls only itself: its connection gets one answer, is read
// at most 64 KB further, and is closed.
export const CONTROL_HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 30_000;
const HEAD_MAX_BYTES = 16 * 1024;
/** How long a refused or answered connection is read past before it is destroyed. */
const LINGER_MS = 500;
export const CONTROL_MAX_CONNECTIONS = 2048;
const METRICS_CACHE_MS = 1_000;
const IDLE_CLOSE_MS = 5_000;
// Longest usable sun_path on Linux (108 bytes with the terminating NUL).
const MAX_SOCKET_PATH = 107;

export function createControlServer(options: ControlServerOptions): ControlServer {
  const { socketPath, handlers, logger } = options;
  let server: Server | undefined;
  let stopping: Promise<void> | undefined;
  // Ends the event streams at stop(): they never finish by themselves.
  const streams = new AbortController();
  // One listener per open stream: many programs may follow the stream at once.
  setMaxListeners(0, streams.signal);
  let metricsCache: { at: number; value: Promise<{ contentType: string; text: string }> } | undefined;
  // Connections, and those with a request being answered: at stop() the others go first.
  const sockets = new Map<Socket, WireConnection>();
  const answering = new Set<Socket>();

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

  async function dispatch(req: WireRequest, res: WireResponse): Promise<void> {
    const started = performance.now();
    const url = new URL(req.url, 'http://control');
    const route = `${req.method} ${url.pathname}`;
    try {
      if (url.pathname === '/events' && handlers.events) {
        // An event stream has no head of its own to give: GET only.
        allow(req, 'GET', false);
        handlers.events(req, res, streams.signal);
        return;
      }
      if (url.pathname === '/metrics') {
        allow(req, 'GET');
        const m = await metrics();
        res.writeHead(200, { 'content-type': m.contentType, 'content-length': Buffer.byteLength(m.text) });
        res.end(m.text);
        return;
      }
      const gone = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) gone.abort(new Error('caller hung up'));
      });
      const result = await route2(req, url.pathname, gone.signal);
      sendJson(res, 200, result);
    } catch (err) {
      const status = httpStatusFor(err);
      if (status >= 500 && !(err instanceof AgentError)) logger.error({ err, route }, 'control request failed');
      else logger.debug({ route, code: (err as AgentError).code }, 'control request refused');
      // RFC 9110 15.5.6: a 405 names the methods the route takes.
      sendJson(res, status, errorBody(err), err instanceof MethodNotAllowed ? { allow: err.allowed } : {});
    } finally {
      logger.debug({ route, status: res.statusCode, ms: Math.round(performance.now() - started) }, 'control request');
    }
  }

  async function route2(req: WireRequest, path: string, signal: AbortSignal): Promise<unknown> {
    switch (path) {
      case '/status':
        allow(req, 'GET');
        return handlers.status();
      case '/faces':
        allow(req, 'GET');
        return handlers.faces();
      case '/faces/sync':
        allow(req, 'POST');
        return handlers.syncFaces();
      case '/say':
        allow(req, 'POST');
        return handlers.say(jsonBody(req), signal);
      case '/voiceprint/enroll':
        allow(req, 'POST');
        return handlers.enrollVoiceprint(jsonBody(req), signal);
      default:
        throw new RouteNotFound(`no such control endpoint ${path}; the daemon serves GET /status, GET /faces, POST /faces/sync, POST /say, POST /voiceprint/enroll, GET /metrics, GET /events`);
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
      const limits = {
        headMaxBytes: HEAD_MAX_BYTES, bodyMaxBytes: MAX_BODY, headersTimeoutMs: CONTROL_HEADERS_TIMEOUT_MS,
        requestTimeoutMs: REQUEST_TIMEOUT_MS, lingerMs: LINGER_MS,
      };
      const wire = {
        request(req: WireRequest, res: WireResponse) {
          answering.add(res.socket);
          void dispatch(req, res).finally(() => answering.delete(res.socket));
        },
        refusal: (status: number, message: string) => ({ contentType: 'application/json', text: `${JSON.stringify(errorBody(new UsageError(message)))}\n` }),
      };
      // Half-open allowed: a request cut short by the client's FIN is still answered (400).
      const srv = createServer({ allowHalfOpen: true }, (socket) => {
        sockets.set(socket, serveConnection(socket, limits, wire));
        socket.once('close', () => {
          sockets.delete(socket);
          answering.delete(socket);
        });
      });
      srv.maxConnections = CONTROL_MAX_CONNECTIONS;
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
        // Stop taking new connections; in-flight requests finish as their components drain. One
        // with nothing being answered (a request never finished) is closed after IDLE_CLOSE_MS.
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        for (const [socket, connection] of sockets) if (connection.idle()) socket.destroy();
        const drainMs = options.drainMs ?? IDLE_CLOSE_MS;
        const idle = setTimeout(() => {
          for (const socket of sockets.keys()) if (!answering.has(socket)) socket.destroy();
        }, Math.min(IDLE_CLOSE_MS, drainMs));
        const timer = setTimeout(() => {
          for (const socket of sockets.keys()) socket.destroy();
        }, drainMs);
        await closed;
        clearTimeout(idle);
        clearTimeout(timer);
        await unlink(socketPath).catch(() => {});
      })();
      return stopping;
    },
  };
}

/** The route takes `method` (and HEAD, where it is GET: the same answer, its body left out by the wire). */
function allow(req: WireRequest, method: string, head = method === 'GET'): void {
  if (req.method === method || (head && req.method === 'HEAD')) return;
  const allowed = head ? `${method}, HEAD` : method;
  throw new MethodNotAllowed(`${req.url} takes ${allowed}, not ${req.method}`, allowed);
}

function sendJson(res: WireResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = `${JSON.stringify(body ?? null)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

/** The request's body as a JSON object ({} when empty); its size was bounded as it came in. */
function jsonBody(req: WireRequest): Record<string, unknown> {
  const text = req.body.toString('utf8').trim();
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

// How errors cross the control socket: the body is the error's toJSON() plus its exit code, so the
// CLI on the other side exits exactly as if it had made the call itself; the HTTP status tells other
// programs on the terminal the class of problem without parsing the body.

export interface ControlErrorBody {
  error: string;
  code: string;
  exit_code: number;
  [key: string]: unknown;
}

export function httpStatusFor(err: unknown): number {
  if (err instanceof RouteNotFound) return 404;
  if (err instanceof MethodNotAllowed) return 405;
  if (err instanceof UsageError || err instanceof InvalidInputError || err instanceof BadRequestError) return 400;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof BusyError) return 409;
  if (err instanceof AbortedError) return 503;
  if (err instanceof TimeoutError) return 504;
  // The service refused the agent's credentials or is down: a gateway problem, not the caller's.
  if (err instanceof AuthError || err instanceof ServiceError) return 502;
  if (err instanceof ConfigError) return 500;
  return 500;
}

export function errorBody(err: unknown): ControlErrorBody {
  if (isAgentError(err)) {
    const body = { ...err.toJSON(), exit_code: err.exitCode } as ControlErrorBody;
    if (err instanceof ConfigError) body.problems = err.problems;
    return body;
  }
  // Not one of ours: a bug. Say so without leaking internals (stack goes to the daemon's log).
  return { error: `internal error in the daemon: ${(err as Error)?.message ?? String(err)}`, code: 'TA_ERR_FAILURE', exit_code: 1 };
}

/** No such route on the control socket. */
export class RouteNotFound extends UsageError {}
export class MethodNotAllowed extends UsageError {
  constructor(message: string, readonly allowed: string) {
    super(message);
  }
}
