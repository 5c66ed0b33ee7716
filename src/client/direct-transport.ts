import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type SecureContext } from 'node:tls';
import type { Target, Transport, TransportRequest, TransportResponse } from './transport.js';
import { secureContextFor, type TlsOptions } from './trust.js';
import { requestHead, send } from './http1-request.js';
import { CONNECT_TIMEOUT_CODE } from './error-mapping.js';
import { BodyReader, HttpParseError, MAX_HEAD_BYTES, ResponseBody, parseHead, type ResponseHead } from './http1-response.js';

// Direct connections (no proxy): HTTP/1.1 over node:net and node:tls, with a keep-alive pool per
// origin. Not node:http's client: its request and response objects, agent bookkeeping and
// stream plumbing cost about 0.25 ms of CPU per request on this machine, against about 0.1 ms
// here, and every enrolled file and every synced face is a request (docs/performance-history.md,
// r28). What node:http did for the client is kept: a connect timeout, no redirect followed,
// socket errors as they are (ECONNREFUSED, ENOTFOUND, certificate codes) and parser refusals as
// HPE_* codes for error-mapping.ts, TCP_NODELAY, TCP keep-alive, TLS sessions resumed, one TLS
// context for every connection, idle connections closed after 4 s (sooner when the server's
// Keep-Alive says so), header names and values checked before they are written.

export interface DirectTransportOptions {
  /** Trusted roots and cipher order for https, or undefined for node's. */
  tls?: TlsOptions | undefined;
  connectTimeoutMs: number;
}

/** A pooled connection is closed after this long unused (undici's and node's agents' default). */
const IDLE_SOCKET_MS = 4_000;

/** How every answer begins. */
const STATUS_PREFIX = Buffer.from('HTTP/1.', 'latin1');

function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

function connectTimeout(ms: number): Error {
  return Object.assign(new Error(`Connect Timeout Error (attempted for ${ms} ms)`), { code: CONNECT_TIMEOUT_CODE });
}

/** The connection ended before the whole answer: node:http's words and code for it. */
function hangUp(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

/** How long a connection may wait for its next request: 4 s, or less when the server said so. */
function keepFor(head: ResponseHead): number {
  const given = head.headers['keep-alive'];
  const hint = given === undefined ? undefined : /(?:^|[\s,])timeout=(\d+)/i.exec(String(given))?.[1];
  return hint === undefined ? IDLE_SOCKET_MS : Math.min(IDLE_SOCKET_MS, Number(hint) * 1000 - 1000);
}

/** What the connection's events are passed to while it carries an exchange. */
interface Exchange {
  data(chunk: Buffer): void;
  closed(err: Error | undefined): void;
}

interface Connection {
  socket: Socket;
  key: string;
  exchange: Exchange | undefined;
  idle: NodeJS.Timeout | undefined;
}

export function directTransport(options: DirectTransportOptions): Transport {
  // One TLS context for every connection, made at the first https request (trust.ts): a cipher
  // order and service.ca_file's certificates are set once, and a CLI call over http makes none.
  let context: SecureContext | undefined;
  const sessions = new Map<string, Buffer>();
  const pool = new Map<string, Connection[]>();
  // Exchanges not finished yet: close() lets them finish.
  let inFlight = 0;
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;
  const finished = () => {
    inFlight -= 1;
    if (inFlight === 0) drained?.();
  };

  function forget(conn: Connection): void {
    clearTimeout(conn.idle);
    const list = pool.get(conn.key);
    const i = list ? list.indexOf(conn) : -1;
    if (i >= 0) list!.splice(i, 1);
  }

  function open(base: URL, key: string): Connection {
    const secure = base.protocol === 'https:';
    const host = base.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(base.port) || (secure ? 443 : 80);
    const socket = secure
      ? tlsConnect({ host, port, servername: isIP(host) ? undefined : host, secureContext: (context ??= secureContextFor(options.tls)), session: sessions.get(key) })
      : netConnect({ host, port });
    // tls.connect takes no noDelay option (nodejs/node#62003): with Nagle on, the last small write
    // of a request waited for the server's delayed ACK, 40 ms an upload over HTTPS.
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    const conn: Connection = { socket, key, exchange: undefined, idle: undefined };
    const timer = setTimeout(() => socket.destroy(connectTimeout(options.connectTimeoutMs)), options.connectTimeoutMs);
    socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(timer));
    let failure: Error | undefined;
    socket.on('data', (chunk: Buffer) => {
      // Bytes nobody asked for: the connection cannot be trusted with the next request.
      if (conn.exchange) conn.exchange.data(chunk);
      else socket.destroy();
    });
    socket.on('error', (err) => { failure ??= err; });
    socket.on('close', () => {
      clearTimeout(timer);
      forget(conn);
      conn.exchange?.closed(failure);
    });
    if (secure) socket.on('session', (session: Buffer) => sessions.set(key, session));
    return conn;
  }

  function take(key: string): Connection | undefined {
    const list = pool.get(key);
    while (list && list.length > 0) {
      const conn = list.pop()!;
      clearTimeout(conn.idle);
      if (!conn.socket.destroyed && conn.socket.writable) {
        conn.socket.ref();
        return conn;
      }
    }
    return undefined;
  }

  /** Back to the pool, unreferenced (an idle connection keeps no process alive), for `ms`. */
  function park(conn: Connection, ms: number): void {
    conn.exchange = undefined;
    if (closing || ms <= 0 || conn.socket.destroyed) {
      conn.socket.destroy();
      return;
    }
    conn.socket.resume();
    conn.socket.unref();
    conn.idle = setTimeout(() => conn.socket.destroy(), ms);
    conn.idle.unref();
    let list = pool.get(conn.key);
    if (!list) pool.set(conn.key, (list = []));
    list.push(conn);
  }

  function request({ base, path }: Target, r: TransportRequest): Promise<TransportResponse> {
    return new Promise((resolve, reject) => {
      const { cancel } = r;
      if (closing) {
        reject(Object.assign(new Error('The client is closed'), { code: 'ERR_CLIENT_CLOSED' }));
        return;
      }
      if (cancel.cancelled) {
        reject(abortError());
        return;
      }
      let head: string;
      try {
        head = requestHead(base, path, r);
      } catch (err) {
        reject(err);
        return;
      }
      const key = `${base.protocol}//${base.host}`;
      const conn = take(key) ?? open(base, key);
      const { socket } = conn;
      inFlight += 1;
      let pending: Buffer | undefined; // head bytes so far
      let answer: ResponseHead | undefined;
      let reader: BodyReader | undefined;
      let body: ResponseBody | undefined;
      let sent = false;
      let over = false;

      const end = (reuse: boolean) => {
        over = true;
        // Once the answer is in, cancelling still ends its body for a reader that has not read it
        // all (its stream's destroy forgets the action).
        if (!body) cancel.onCancel(undefined);
        if (reuse && answer) park(conn, keepFor(answer));
        else {
          conn.exchange = undefined;
          socket.destroy();
        }
        finished();
      };
      const fail = (err: Error) => {
        if (over) return;
        end(false);
        if (!body) reject(err);
        // On a later turn: the caller given this body attaches its reader when its await resumes,
        // which may come after an error raised in the same read as the head (a stream destroyed
        // before anyone listens tells nobody).
        else setImmediate(() => body!.destroy(err));
      };
      const push = (piece: Buffer) => {
        if (!body!.push(piece)) socket.pause();
      };
      const feed = (chunk: Buffer) => {
        let used: number;
        try {
          used = reader!.feed(chunk, push);
        } catch (err) {
          fail(err as Error);
          return;
        }
        if (!reader!.done) return;
        body!.push(null);
        // Reused only when all of the request left and nothing came after the answer.
        end(answer!.keepAlive && sent && used === chunk.length);
      };
      const onHead = (chunk: Buffer) => {
        pending = pending ? Buffer.concat([pending, chunk]) : chunk;
        // Bytes that cannot begin an answer are refused as they come, as node's parser does: a
        // server that then closes is at fault, not the network.
        const n = Math.min(STATUS_PREFIX.length, pending.length);
        if (pending.compare(STATUS_PREFIX, 0, n, 0, n) !== 0) {
          fail(new HttpParseError('HPE_INVALID_CONSTANT', 'the answer does not begin with HTTP/1.'));
          return;
        }
        const at = pending.indexOf('\r\n\r\n');
        if (at < 0 || at > MAX_HEAD_BYTES) {
          if (pending.length > MAX_HEAD_BYTES) fail(new HttpParseError('HPE_HEADER_OVERFLOW', 'an answer head longer than 16 KB'));
          return;
        }
        let parsed: ResponseHead;
        try {
          parsed = parseHead(pending.toString('latin1', 0, at), r.method);
        } catch (err) {
          fail(err as Error);
          return;
        }
        const rest = pending.subarray(at + 4);
        pending = undefined;
        if (parsed.statusCode < 200) {
          // 100 Continue, 103 Early Hints: the answer follows. The agent never asks to switch protocols.
          if (parsed.statusCode === 101) fail(new HttpParseError('HPE_INVALID_CONSTANT', 'the server switched protocols unasked'));
          else if (rest.length > 0) onHead(rest);
          return;
        }
        answer = parsed;
        reader = new BodyReader(parsed.framing);
        // A reader still at the bytes of an answer that is over leaves the connection alone: by then
        // it is idle or carries another exchange.
        body = new ResponseBody(() => { if (!over) socket.resume(); }, () => {
          cancel.onCancel(undefined);
          // Also called when a body read to its end closes: no error is made for that.
          if (!over) fail(abortError());
        });
        // Until a reader attaches, an error (a cut body) must not reach the process as an
        // unhandled 'error' event; readers that iterate, pipe or listen still get it.
        body.on('error', () => {});
        resolve({ statusCode: parsed.statusCode, headers: parsed.headers, body });
        // An answer with no body ends here; bytes after it keep the connection from being reused.
        if (reader.done || rest.length > 0) feed(rest);
      };
      conn.exchange = {
        data: (chunk) => (reader ? feed(chunk) : onHead(chunk)),
        closed: (err) => {
          if (over) return;
          // A body read to the close is whole; any other answer was cut.
          if (!err && reader?.closed()) {
            body!.push(null);
            end(false);
            return;
          }
          fail(err ?? hangUp());
        },
      };
      cancel.onCancel(() => {
        if (!over) fail(abortError());
        else body?.destroy(abortError());
      });
      if (!over) send(socket, head, r.body, () => { sent = true; }, fail, () => over);
    });
  }

  return {
    request,
    close() {
      closing ??= (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => { drained = resolve; })).then(() => {
        for (const list of pool.values()) for (const conn of list.splice(0)) conn.socket.destroy();
      });
      return closing;
    },
  };
}
