import { connect } from 'node:net';

// One HTTP/1.1 exchange with the daemon's control socket, on a socket of its own, without
// node:http. A CLI call through the socket must cost little more than the round trip, and
// node:http's client (its modules, a request object, the parser, an AbortSignal timer) cost a
// `status` about as much CPU as all the rest of the command. The daemon's side is node's own
// HTTP server: the request says `Connection: close`, the answer is read to its Content-Length (or
// to the end, chunked or not) and the socket closed.
//
// The answer's bytes come through the socket's `onread` callback, not its readable stream (whose
// code Node compiles on first use: about 1 % of a `status`). Once the answer is in, the socket is
// closed on the next turn of the event loop: a CLI that has its answer exits before that (main.ts),
// and the teardown of a socket (its destroy code, and node's look at process.stderr, which builds
// that stream) costs about 3 % of a `status`. A process that goes on still closes it at once.

export interface ControlResponse {
  status: number;
  text: string;
}

/** The call took longer than its deadline. */
export class ControlTimeout extends Error {}

/** The caller's signal ended the call: the socket is closed, which the daemon takes as a hang-up. */
export class ControlAborted extends Error {}

/**
 * The daemon's end closed (or reset) the connection before a whole answer came: it stopped,
 * crashed or restarted during the call, which may have had its effect by then.
 */
export class ControlClosed extends Error {}

const HEAD_END = Buffer.from('\r\n\r\n');
const READ_BUFFER_BYTES = 64 * 1024;

export function controlRequest(socketPath: string, method: string, path: string, payload: string | undefined, timeoutMs: number, signal?: AbortSignal): Promise<ControlResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ControlAborted(`${method} ${path} not sent: interrupted`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    let connected = false;
    const socket = connect({
      path: socketPath,
      onread: {
        buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
        callback: (n, buf) => {
          // The buffer is read into again: keep a copy.
          chunks.push(Buffer.from(buf.subarray(0, n)));
          size += n;
          // Done as soon as the announced length is in: a server that keeps the socket open costs nothing.
          settle(false);
          return true;
        },
      },
    });
    const finish = (err: Error | undefined, res?: ControlResponse) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        socket.destroy();
        reject(err);
        return;
      }
      setImmediate(() => socket.destroy());
      resolve(res!);
    };
    const settle = (ended: boolean) => {
      try {
        const res = parseResponse(Buffer.concat(chunks, size), ended);
        if (res) finish(undefined, res);
      } catch (err) {
        finish(err as Error);
      }
    };
    const timer = setTimeout(() => finish(new ControlTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => finish(new ControlAborted(`${method} ${path} interrupted before the daemon answered`));
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('connect', () => {
      connected = true;
      const body = payload === undefined ? '' : payload;
      const head = `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n`
        + (payload === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`);
      socket.write(`${head}\r\n${body}`);
    });
    socket.on('end', () => settle(true));
    // Once connected, a reset or a broken pipe is the daemon's end going away (killed, crashed).
    socket.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      finish(connected && (code === 'ECONNRESET' || code === 'EPIPE') ? new ControlClosed(`the connection was reset (${code}) before an answer came`, { cause: err }) : err);
    });
  });
}

/** The response when it is complete (at the end of the stream, `ended`), else null. */
function parseResponse(buf: Buffer, ended: boolean): ControlResponse | null {
  const headEnd = buf.indexOf(HEAD_END);
  if (headEnd < 0) {
    if (ended && buf.length === 0) throw new ControlClosed('the connection closed before any answer came');
    if (ended && buf.subarray(0, 5).toString('latin1') === 'HTTP/') throw new ControlClosed('the connection closed before a whole answer came');
    if (ended) throw new Error('the answer is not HTTP');
    return null;
  }
  const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!m) throw new Error('the answer is not HTTP');
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  let body = buf.subarray(headEnd + HEAD_END.length);
  const length = headers.get('content-length');
  if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) {
    if (!ended) return null;
    body = dechunk(body);
  } else if (length !== undefined && /^\d+$/.test(length)) {
    if (body.length < Number(length)) {
      if (ended) throw new ControlClosed('the connection closed before a whole answer came');
      return null;
    }
    body = body.subarray(0, Number(length));
  } else if (!ended) return null;
  return { status: Number(m[1]), text: body.toString('utf8') };
}

function dechunk(buf: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at);
    if (lineEnd < 0) throw new ControlClosed('the connection closed before a whole answer came');
    const n = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(n)) throw new Error('a malformed chunked answer');
    if (n === 0) return Buffer.concat(parts);
    if (lineEnd + 2 + n > buf.length) throw new ControlClosed('the connection closed before a whole answer came');
    parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + n));
    at = lineEnd + 2 + n + 2;
  }
}
