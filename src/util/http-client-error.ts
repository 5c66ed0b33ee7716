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
  HPE_INVALID_EOF_STATE: [400, 'Bad Request', 'the connection ended before the whole request came'],
};
const BAD_REQUEST: [number, string, string] = [400, 'Bad Request', 'not a valid HTTP/1.1 request'];

/** The body of a refusal in a listener's own error shape; plain text when none is given. */
export type RefusalBody = (status: number, message: string) => { contentType: string; text: string };

const plainText: RefusalBody = (_status, message) => ({ contentType: 'text/plain', text: `${message}\n` });

/**
 * The answer to a request the parser refused: its status, and a one-line reason (llhttp's own,
 * such as "Invalid header value char", when it gives one) in the listener's error shape.
 */
export function clientErrorAnswer(err: { code?: string; reason?: unknown }, body: RefusalBody = plainText): string {
  const [status, phrase, why] = ANSWERS[err.code ?? ''] ?? BAD_REQUEST;
  const reason = typeof err.reason === 'string' && err.reason !== '' && status === 400 && why === BAD_REQUEST[2] ? `: ${err.reason}` : '';
  const { contentType, text } = body(status, `${why}${reason}`);
  return `HTTP/1.1 ${status} ${phrase}\r\nConnection: close\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

/** Installs the answer-then-linger handler on `server`'s 'clientError'. */
export function answerClientErrors(server: Server, body?: RefusalBody): void {
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
    socket.end(clientErrorAnswer(err as { code?: string; reason?: unknown }, body));
    const timer = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS);
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
