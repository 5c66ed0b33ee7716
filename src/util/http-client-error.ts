import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

// A request the HTTP parser refuses (bad syntax, headers too large, headers too slow) is answered
// here instead of by Node's default, which writes the answer and closes the socket at once. A
// client still sending (a slow one, or one that streams its request before reading) then writes
// into a closed socket: over a unix socket its write fails with EPIPE and Node drops the answer
// unread; over TCP the unread bytes make the kernel send a reset, which can discard the answer
// in flight. Measured over a unix socket, a client writing its headers a byte every 1 ms: 4 of 40
// such clients read their 408 with Node's default, 40 of 40 with this. So the answer is sent and
// the writing side closed (FIN), and the socket keeps being read, for a short linger, before it
// is destroyed: the client sees the answer, then the end, and closes its side itself.

/** How long a refused client may keep sending before its socket is destroyed. */
export const CLIENT_ERROR_LINGER_MS = 500;

const ANSWERS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request headers are larger than this server accepts'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Payload Too Large', 'the chunk extensions are larger than this server accepts'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request did not arrive in time'],
};
const BAD_REQUEST: [number, string, string] = [400, 'Bad Request', 'not a valid HTTP/1.1 request'];

/** The answer to a request the parser refused, with a one-line reason as its body. */
export function clientErrorAnswer(code: string | undefined): string {
  const [status, phrase, why] = ANSWERS[code ?? ''] ?? BAD_REQUEST;
  const body = `${why}\n`;
  return `HTTP/1.1 ${status} ${phrase}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Installs the answer-then-linger handler on `server`'s 'clientError'. */
export function answerClientErrors(server: Server, lingerMs = CLIENT_ERROR_LINGER_MS): void {
  const lingering = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Answered already and lingering: what the client still sends may fail to parse again.
    if (lingering.has(socket)) return;
    const response = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // A broken connection has nobody to answer, and an answer already begun cannot take another.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    lingering.add(socket);
    socket.end(clientErrorAnswer(err.code));
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}

/**
 * True for a request that came in on a socket whose writing side is closed: one that finished
 * arriving while its connection lingered after a refusal. It has nobody to answer and must not
 * run; its handler drains and drops it.
 */
export function unanswerable(req: IncomingMessage): boolean {
  if (!req.socket.writableEnded) return false;
  req.resume();
  return true;
}
