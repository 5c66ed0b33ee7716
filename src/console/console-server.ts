import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentConfig } from '../config/schema.js';
import { parseConsoleListen } from '../config/listen-address.js';
import { readConsoleTls, unusableConsoleTls } from '../config/named-files.js';
import type { Db } from '../db/database.js';
import type { ServiceClient } from '../client/types.js';
import type { Logger } from '../log/logger.js';
import { AgentError, ConfigError, describeError } from '../errors.js';
import { createLayout } from '../enroll/layout.js';
import { sweepUploads } from '../enroll/drop.js';
import { hashPassword, parsePasswordHash, type PasswordHash } from '../util/password-hash.js';
import { createConsoleAuth, type ConsoleAuth } from './auth.js';
import { ConsoleHttpError, badRequest, errorStatus, notFound, securityHeaders, sendError, sendJsonCompressed } from './http.js';
import { createRoutes, type ConsoleHandlers } from './routes.js';
import { createStaticFiles } from './static-files.js';
import { createThumbnails } from './thumbnails.js';
import { answerClientErrors, unanswerable } from '../util/http-client-error.js';

// The web console: one HTTP(S) server on console.listen, serving the built pages and the JSON API.
// Off unless configured; the daemon imports this module only then.

export interface ConsoleDeps {
  config: AgentConfig;
  logger: Logger;
  db: Db;
  /** The current generation's service client (a reload may replace it). */
  client: () => Pick<ServiceClient, 'synthesize' | 'listVoices'>;
  handlers: ConsoleHandlers;
  /** Serves the event stream (SSE) on GET /api/events. */
  eventStream?: (req: IncomingMessage, res: ServerResponse) => void;
  /** The built pages; default dist/web beside this module's folder. */
  webDir?: string;
}

export interface ConsoleServer {
  /** e.g. http://127.0.0.1:8080/ (the real port when listen asked for 0). */
  readonly url: string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  status(): Record<string, unknown>;
}

async function passwordOf(c: AgentConfig['console']): Promise<PasswordHash | undefined> {
  // The systemd credential wins, as for the other secrets; it may hold the password or its hash.
  if (c.password_credential) {
    let text: string;
    try {
      text = (await readFile(c.password_credential, 'utf8')).replace(/\r?\n$/, '');
    } catch (err) {
      throw new ConfigError([{ path: 'console.password_hash', file: c.password_credential, message: `the console_password credential cannot be read (${describeError(err)})` }]);
    }
    if (text === '') throw new ConfigError([{ path: 'console.password_hash', file: c.password_credential, message: 'the console_password credential is empty' }]);
    // Only the hash is kept in memory.
    return parsePasswordHash(text) ?? parsePasswordHash(await hashPassword(text, { ln: 14, r: 8, p: 1 }));
  }
  return c.password_hash ? parsePasswordHash(c.password_hash) : undefined;
}

export function createConsoleServer(deps: ConsoleDeps): ConsoleServer {
  const { config, logger } = deps;
  const log = logger.child({ component: 'console' });
  const thumbnails = createThumbnails({ dir: join(config.state_dir, 'console', 'thumbs'), logger: log });
  const webDir = deps.webDir ?? fileURLToPath(new URL('../web/', import.meta.url));
  const files = createStaticFiles(webDir);
  let server: Server | undefined;
  let auth: ConsoleAuth | undefined;
  let url: string | undefined;
  let tls = false;
  let stopping: Promise<void> | undefined;

  const routes = createRoutes({
    config, db: deps.db, client: deps.client, handlers: deps.handlers, thumbnails,
    ...(deps.eventStream ? { eventStream: deps.eventStream } : {}),
    consoleStatus: () => status(),
  });

  function status(): Record<string, unknown> {
    return { url: url ?? null, tls, login_required: auth?.loginRequired ?? null, sessions: auth?.sessions.size() ?? 0, thumbnails: thumbnails.stats() };
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const method = req.method ?? 'GET';
    let path = '(target not read)';
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort(new Error('the browser went away'));
    });
    securityHeaders(res, tls);
    // Everything read from the request, its target first, is read inside the try: whatever was
    // sent, a failure is this request's answer, never the daemon's end.
    try {
      const u = targetOf(req.url);
      path = u.pathname;
      const a = auth!;
      a.checkHost(req);
      if (!path.startsWith('/api/')) {
        if ((method === 'GET' || method === 'HEAD') && (await files.serve(req, res, path))) return;
        throw notFound(`no page at ${path}`, 'open /');
      }
      if (path === '/api/session' && method === 'GET') return a.session(req, res);
      if (path === '/api/login' && method === 'POST') {
        // Login CSRF: a foreign page must not log the browser into this console either.
        const origin = req.headers.origin;
        if (origin !== undefined && origin !== `${tls ? 'https' : 'http'}://${req.headers.host ?? ''}`) {
          throw new ConsoleHttpError(403, 'TA_ERR_CSRF', `a login from another site (${origin}) is refused`);
        }
        return await a.login(req, res);
      }
      const session = a.require(req);
      if (method !== 'GET' && method !== 'HEAD') a.checkChange(req, session);
      const json = (v: unknown, status = 200) => sendJsonCompressed(req, res, status, v);
      const face = /^\/api\/faces\/([^/]+)\/(thumb|image)$/.exec(path);
      const route = `${method} ${face ? `/api/faces/:id/${face[2]}` : path}`;
      switch (route) {
        case 'POST /api/logout': return a.logout(req, res);
        case 'GET /api/status': return await json(await routes.status());
        case 'GET /api/events': return routes.events(req, res);
        case 'GET /api/faces': return await json(await routes.faces(u));
        case 'POST /api/faces/sync': return await json(await routes.syncFaces());
        case 'GET /api/faces/:id/thumb': return await routes.faceThumb(req, res, segment(face![1]!));
        case 'GET /api/faces/:id/image': return await routes.faceImage(req, res, segment(face![1]!));
        case 'GET /api/enroll': return await json(await routes.enroll(u));
        case 'GET /api/enroll/file': return await routes.enrollFile(req, res, u);
        case 'POST /api/enroll/upload': return await json(await routes.upload(req, u), 201);
        case 'POST /api/enroll/retry': return await json(await routes.retry(req));
        case 'POST /api/say': return await json(await routes.say(req, gone.signal));
        case 'GET /api/tts': return await routes.tts(res, u, gone.signal);
        case 'GET /api/voices': return await json(await routes.voices(u, gone.signal));
        case 'GET /api/voiceprints': return await json(routes.voiceprints());
        case 'GET /api/speakers': return await json(routes.speakers());
        case 'POST /api/voiceprint/enroll': return await json(await routes.enrollVoiceprint(req, gone.signal));
        default:
          throw notFound(`no API endpoint ${method} ${path}`);
      }
    } catch (err) {
      const status = errorStatus(err);
      // A browser that went away mid-request (its body cut short) is no fault of the daemon's.
      const hungUp = gone.signal.aborted || (err as NodeJS.ErrnoException | undefined)?.code === 'ECONNRESET';
      if (status >= 500 && !(err instanceof AgentError) && !hungUp) log.error({ err, route: `${method} ${path}` }, 'console request failed');
      else log.debug({ route: `${method} ${path}`, status, code: (err as AgentError).code }, 'console request refused');
      // A refused upload is not read to its end: close the connection after the answer rather than
      // drain megabytes; a small unread body is drained so the connection can be reused.
      const unread = !req.readableEnded && (Number(req.headers['content-length'] ?? 0) > 65536 || req.headers['transfer-encoding'] !== undefined);
      if (unread && !res.headersSent) res.setHeader('connection', 'close');
      sendError(res, err);
      if (!unread) req.resume();
    } finally {
      log.trace({ route: `${method} ${path}`, status: res.statusCode, ms: Math.round(performance.now() - started) }, 'console request');
    }
  }

  return {
    get url() {
      return url;
    },
    status,
    async start() {
      if (server) return;
      const addr = parseConsoleListen(config.console.listen);
      if (typeof addr === 'string') throw new ConfigError([{ path: 'console.listen', message: addr }]);
      const password = await passwordOf(config.console);
      if (!addr.loopback && !password) {
        throw new ConfigError([{ path: 'console.listen', message: `${config.console.listen} reaches beyond this machine and the console has no password: set console.password_hash or the console_password credential` }]);
      }
      const cert = readConsoleTls(config.console);
      tls = cert !== undefined;
      auth = createConsoleAuth({ password, tls, sessionTtlMs: config.console.session_ttl });
      const swept = await sweepUploads(createLayout(config.enroll.dir, config.state_dir)).catch(() => 0);
      if (swept > 0) log.info({ removed: swept }, 'removed uploads cut short by a previous stop');
      const handler = (req: IncomingMessage, res: ServerResponse) => {
        if (unanswerable(req)) return;
        // dispatch answers its own errors; this is for a failure in answering one.
        dispatch(req, res).catch((err: unknown) => {
          log.error({ err }, 'console request could not be answered');
          res.destroy();
        });
      };
      let srv: Server;
      try {
        srv = cert ? (createHttpsServer({ cert: cert.cert, key: cert.key }, handler) as unknown as Server) : createHttpServer(handler);
      } catch (err) {
        throw unusableConsoleTls(config.console.tls_cert_file, err);
      }
      // Uploads of enroll.max_file_size over a slow Wi-Fi, and recordings, take minutes.
      srv.requestTimeout = 10 * 60_000;
      srv.headersTimeout = 20_000;
      srv.maxConnections = 128;
      answerClientErrors(srv, (status, message) => ({ contentType: 'application/json', text: `${JSON.stringify({ error: { code: status === 408 ? 'TA_ERR_TIMEOUT' : 'TA_ERR_USAGE', message } })}\n` }));
      await new Promise<void>((resolve, reject) => {
        srv.once('error', (err: NodeJS.ErrnoException) => {
          const why = err.code === 'EADDRINUSE' ? 'another program already listens there: stop it or choose another port'
            : err.code === 'EADDRNOTAVAIL' ? 'this machine has no such address'
              : err.code === 'EACCES' ? 'ports below 1024 need privileges the agent does not have: use a port above 1024' : describeError(err);
          reject(new AgentError(`the web console cannot listen on ${config.console.listen}: ${why}`, { cause: err, details: { listen: config.console.listen } }));
        });
        srv.listen(addr.port, addr.host, () => resolve());
      });
      server = srv;
      const bound = srv.address();
      const port = bound && typeof bound === 'object' ? bound.port : addr.port;
      const host = addr.host.includes(':') ? `[${addr.host}]` : addr.host === '0.0.0.0' ? '127.0.0.1' : addr.host;
      url = `${tls ? 'https' : 'http'}://${host}:${port}/`;
      log.info({ url, listen: config.console.listen, tls, login_required: auth.loginRequired }, 'web console listening');
      // Tiles of faces removed or changed while the daemon was down; in the background.
      void (async () => {
        const faces = (await deps.handlers.faces()) as { face_id: string; image: string; image_sha256: string }[];
        const removed = await thumbnails.prune(faces.map((f) => ({ faceId: f.face_id, sha256: f.image_sha256, path: join(config.state_dir, 'faces', f.image) })));
        if (removed > 0) log.debug({ removed }, 'removed thumbnails of faces no longer cached');
      })().catch(() => undefined);
    },
    stop() {
      if (!server) return Promise.resolve();
      stopping ??= (async () => {
        const srv = server!;
        routes.close();
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        // Event streams never end by themselves.
        srv.closeIdleConnections();
        const timer = setTimeout(() => srv.closeAllConnections(), 2000);
        await closed;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

/** The request target as a URL; one that is no URL (`http://[`) is the caller's 400. */
function targetOf(target: string | undefined): URL {
  try {
    return new URL(target ?? '/', 'http://console');
  } catch {
    throw badRequest('the request target is not a valid URL', 'open /');
  }
}

/** A percent-encoded path segment; a malformed escape (`%zz`) is the caller's 400. */
function segment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw badRequest('the face id in the path is not valid percent-encoding');
  }
}
