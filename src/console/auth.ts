import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { verifyPassword, type PasswordHash } from '../util/password-hash.js';
import { ConsoleHttpError, clientAddress, parseCookies, readJsonObject, sendJson } from './http.js';
import { createLoginLimiter, type LoginLimiter } from './login-limiter.js';
import { createSessionStore, sameToken, type Session, type SessionStore } from './sessions.js';

// Who may use the console. With a password (required beyond loopback) a page must log in and gets
// a session cookie (HttpOnly, SameSite=Strict, Secure under TLS). Without one (loopback only) the
// browser still gets a session, silently, so that every change carries a CSRF token either way.
// Changes also need a same-origin Origin, and without a login the Host must be an address or
// localhost: a rebound DNS name pointing at 127.0.0.1 must not reach the API.

export interface ConsoleAuthOptions {
  password: PasswordHash | undefined;
  tls: boolean;
  sessionTtlMs: number;
  limiter?: LoginLimiter;
  now?: () => number;
}

export interface ConsoleAuth {
  readonly loginRequired: boolean;
  /** The caller's session; throws 401 when there is none. */
  require(req: IncomingMessage): Session;
  /** For POST/PUT/DELETE: the CSRF token header and the Origin. Throws 403. */
  checkChange(req: IncomingMessage, session: Session): void;
  checkHost(req: IncomingMessage): void;
  session(req: IncomingMessage, res: ServerResponse): void;
  login(req: IncomingMessage, res: ServerResponse): Promise<void>;
  logout(req: IncomingMessage, res: ServerResponse): void;
  readonly sessions: SessionStore;
}

export function createConsoleAuth(opts: ConsoleAuthOptions): ConsoleAuth {
  const sessions = createSessionStore({ ttlMs: opts.sessionTtlMs, ...(opts.now ? { now: opts.now } : {}) });
  const limiter = opts.limiter ?? createLoginLimiter(opts.now ? { now: opts.now } : {});
  const cookieName = opts.tls ? '__Host-ta_session' : 'ta_session';
  const loginRequired = opts.password !== undefined;
  // One scrypt at a time: each takes 32 MB and a core for a moment.
  let verifying: Promise<unknown> = Promise.resolve();

  const cookieOf = (req: IncomingMessage) => parseCookies(req.headers.cookie).get(cookieName);

  function setCookie(res: ServerResponse, value: string, maxAgeS: number): void {
    res.setHeader('set-cookie', `${cookieName}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${opts.tls ? '; Secure' : ''}`);
  }

  function startSession(res: ServerResponse): Session {
    const s = sessions.create();
    setCookie(res, s.id, Math.floor(opts.sessionTtlMs / 1000));
    return s;
  }

  return {
    loginRequired,
    sessions,
    require(req) {
      const s = sessions.get(cookieOf(req));
      if (s) return s;
      // Even without a password the API answers only a browser that fetched /api/session from the
      // console itself: the SameSite=Strict cookie keeps other sites' <img>/<audio> requests out.
      throw new ConsoleHttpError(401, 'TA_ERR_LOGIN_REQUIRED', loginRequired ? 'log in first' : 'no console session: GET /api/session first', 'the session ended or the daemon restarted');
    },
    checkChange(req, session) {
      const origin = req.headers.origin;
      if (origin !== undefined) {
        const proto = opts.tls ? 'https' : 'http';
        if (origin !== `${proto}://${req.headers.host ?? ''}`) {
          throw new ConsoleHttpError(403, 'TA_ERR_CSRF', `a change from another site (${origin}) is refused`, 'open the console at its own address');
        }
      }
      const header = req.headers['x-csrf-token'];
      if (!sameToken(Array.isArray(header) ? header[0] : header, session.csrf)) {
        throw new ConsoleHttpError(403, 'TA_ERR_CSRF', 'the request lacks the X-CSRF-Token of this session', 'reload the page');
      }
    },
    checkHost(req) {
      if (loginRequired) return;
      const host = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
      if (host !== 'localhost' && isIP(host) === 0) {
        throw new ConsoleHttpError(403, 'TA_ERR_HOST', `the console without a login answers only at an IP address or localhost, not "${host}"`, 'open http://127.0.0.1:PORT/');
      }
    },
    session(req, res) {
      const existing = sessions.get(cookieOf(req));
      if (existing) {
        sendJson(res, 200, { authenticated: true, login_required: loginRequired, csrf_token: existing.csrf });
        return;
      }
      if (!loginRequired) {
        const s = startSession(res);
        sendJson(res, 200, { authenticated: true, login_required: false, csrf_token: s.csrf });
        return;
      }
      sendJson(res, 200, { authenticated: false, login_required: true });
    },
    async login(req, res) {
      const client = clientAddress(req);
      const wait = limiter.take(client);
      if (wait > 0) {
        throw new ConsoleHttpError(429, 'TA_ERR_RATE_LIMITED', `too many login attempts from ${client}; try again in ${wait} s`, undefined, { 'retry-after': String(wait) });
      }
      const body = await readJsonObject(req, 4096);
      if (!opts.password) {
        const s = sessions.get(cookieOf(req)) ?? startSession(res);
        sendJson(res, 200, { authenticated: true, login_required: false, csrf_token: s.csrf });
        return;
      }
      const password = body.password;
      if (typeof password !== 'string' || password === '' || password.length > 1024) {
        throw new ConsoleHttpError(400, 'TA_ERR_USAGE', 'send {"password": "..."}');
      }
      const stored = opts.password;
      const run = verifying.then(() => verifyPassword(password, stored));
      verifying = run.catch(() => undefined);
      if (!(await run)) throw new ConsoleHttpError(401, 'TA_ERR_LOGIN', 'wrong password');
      limiter.reset(client);
      const old = cookieOf(req);
      if (old) sessions.destroy(old);
      const s = startSession(res);
      sendJson(res, 200, { authenticated: true, login_required: true, csrf_token: s.csrf });
    },
    logout(req, res) {
      const id = cookieOf(req);
      if (id) sessions.destroy(id);
      setCookie(res, '', 0);
      sendJson(res, 200, { authenticated: false, login_required: loginRequired });
    },
  };
}
