import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { RequestBody, StreamBody, Target, TlsOptions, Transport, TransportRequest, TransportResponse } from './transport.js';
import { CONNECT_TIMEOUT_CODE } from './error-mapping.js';

// Direct connections over node:http/https with keep-alive pools. The request side of undici's
// Agent that the client relied on, restated: a connect timeout, no redirect followed (node:http
// follows none), errors from the socket as they are (ECONNREFUSED, ENOTFOUND, HPE_*, certificate
// codes) for error-mapping.ts, and a signal that ends the exchange at any point.

export interface NodeTransportOptions {
  /** Trusted roots and cipher order for https, or undefined for node's. */
  tls?: TlsOptions | undefined;
  connectTimeoutMs: number;
}

/**
 * A pooled connection is dropped after this long unused (undici's default too). Node's agent also
 * honours a shorter `Keep-Alive: timeout=N` from the server (minus a second), but only when a
 * timeout is set here: a socket the server already closed would fail the next request on it.
 */
const IDLE_SOCKET_MS = 4_000;

function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

function connectTimeout(ms: number): Error {
  return Object.assign(new Error(`Connect Timeout Error (attempted for ${ms} ms)`), { code: CONNECT_TIMEOUT_CODE });
}

/** Writes the body, waiting for the socket to drain between pieces of a streamed one. */
function sendBody(req: ClientRequest, body: RequestBody | undefined): void {
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) {
    req.end(body);
    return;
  }
  if (Array.isArray(body)) {
    // Written before the socket is there (it comes a tick later), so node sends the headers and
    // every piece in one writev.
    const pieces = body as readonly Buffer[];
    for (let i = 0; i < pieces.length - 1; i++) req.write(pieces[i]);
    req.end(pieces.at(-1));
    return;
  }
  const stream = body as StreamBody;
  void (async () => {
    try {
      for await (const chunk of stream.chunks()) {
        if (req.destroyed) return; // leaving the loop closes the source (its `finally`)
        if (!req.write(chunk)) {
          await new Promise<void>((resolve) => {
            const done = () => { req.off('drain', done); req.off('close', done); resolve(); };
            req.on('drain', done);
            req.on('close', done);
          });
        }
      }
      req.end();
    } catch (err) {
      req.destroy(err as Error);
    }
  })();
}

/**
 * The headers as a flat list, which node:http writes as they are (each still checked), instead
 * of setting them one by one (a second check and copy each: a few µs per request). The Host
 * header it would add is added here, as URL formats it (brackets for IPv6, no default port).
 * Every POST and PUT of the client has a body with its Content-Length (http-core.ts): a list is
 * written before end(), so node would send an empty one chunked rather than with a zero length.
 */
function headerList(base: URL, headers: Record<string, string>): string[] {
  const list = ['host', base.host];
  for (const name in headers) list.push(name, headers[name]!);
  return list;
}

export function nodeTransport(options: NodeTransportOptions): Transport {
  const http = new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
  // One TLS context for every connection, made at the first https request: without one, node
  // makes a context (an OpenSSL SSL_CTX) per connection. With service.ca_file, the roots (Node's
  // ~140 and the file) are parsed once here; a cipher order, too, is set once.
  let https: HttpsAgent | undefined;
  const httpsAgent = () => (https ??= new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS, secureContext: createSecureContext(options.tls) }));
  // Exchanges not finished yet (response body not closed): close() lets them finish, as undici's did.
  let inFlight = 0;
  let closed: Promise<void> | undefined;
  let drained: (() => void) | undefined;
  const finished = () => {
    inFlight -= 1;
    if (inFlight === 0) drained?.();
  };

  function request({ base, path }: Target, r: TransportRequest): Promise<TransportResponse> {
    return new Promise((resolve, reject) => {
      const { cancel } = r;
      if (closed) {
        reject(Object.assign(new Error('The client is closed'), { code: 'ERR_CLIENT_CLOSED' }));
        return;
      }
      if (cancel.cancelled) {
        reject(abortError());
        return;
      }
      inFlight += 1;
      let over = false;
      const end = () => {
        if (over) return;
        over = true;
        finished();
      };
      const secure = base.protocol === 'https:';
      // Options, not a URL: node:http would parse it again for every request.
      const req = (secure ? httpsRequest : httpRequest)({
        protocol: base.protocol, hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'), port: base.port || undefined, path,
        method: r.method, headers: headerList(base, r.headers), agent: secure ? httpsAgent() : http,
      });
      let res: IncomingMessage | undefined;
      cancel.onCancel(() => {
        const err = abortError();
        req.destroy(err);
        res?.destroy(err);
      });
      const detach = () => cancel.onCancel(undefined);

      req.once('socket', (socket) => {
        if (req.reusedSocket) return;
        // The agent asks for TCP_NODELAY, but tls.connect drops that option (nodejs/node#62003):
        // with Nagle on, the last small write of a request (a body streamed from its file: the
        // multipart's closing boundary) waited for the server's delayed ACK, 40 ms an upload over
        // HTTPS. libuv applies it to a socket not yet connected once it is.
        if (secure) socket.setNoDelay(true);
        const timer = setTimeout(() => req.destroy(connectTimeout(options.connectTimeoutMs)), options.connectTimeoutMs);
        const clear = () => clearTimeout(timer);
        socket.once(secure ? 'secureConnect' : 'connect', clear);
        socket.once('close', clear);
      });
      req.once('response', (incoming) => {
        res = incoming;
        // Until a reader attaches, an error (a cut body) must not reach the process as an
        // unhandled 'error' event; readers that iterate, pipe or listen still get it.
        incoming.on('error', () => {});
        incoming.once('close', () => {
          detach();
          end();
        });
        resolve({ statusCode: incoming.statusCode ?? 0, headers: incoming.headers, body: incoming });
      });
      req.on('error', (err) => {
        if (res) {
          if (!res.destroyed) res.destroy(err);
          return;
        }
        detach();
        end();
        reject(err);
      });
      sendBody(req, r.body);
    });
  }

  return {
    request,
    close() {
      closed ??= (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => { drained = resolve; })).then(() => {
        http.destroy();
        https?.destroy();
      });
      return closed;
    },
  };
}
