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
// closed on a later turn of the event loop: a CLI that has its answer exits before that (main.ts),
// and the teardown of a socket (its destroy code, and node's look at process.stderr, which builds
// that stream) costs about 3 % of a `status`. A process that goes on still closes it at once.
//
// The deadline is an Atomics.waitAsync on a cell of its own, not a node:timers timer: the first
// setTimeout, clearTimeout and setImmediate of a process compile node's timer lists (about 2 % of
// a `status`). V8 times the wait out on the platform's own timer, which, unlike a setTimeout, does
// not keep the process alive: the socket does, until it closes, and then 'end', 'error' or
// 'close' settles the call. Waking the wait when the call is over resolves it on a later turn of
// the loop, which is where the socket of an answered call is closed.

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

/** Atomics.waitAsync (ES2024, in V8 since Node 16; the project's TypeScript lib is ES2023). */
type WaitAsync = (cell: Int32Array, index: number, value: number, timeoutMs: number) => { async: boolean; value: Promise<'ok' | 'timed-out'> | 'not-equal' | 'timed-out' };

const READ_BUFFER_BYTES = 64 * 1024;
/** Node's HTTP server sends heads of at most a few KB; a larger one is not the daemon's. */
const HEAD_MAX_BYTES = 64 * 1024;

export function controlRequest(socketPath: string, method: string, path: string, payload: string | undefined, timeoutMs: number, signal?: AbortSignal): Promise<ControlResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ControlAborted(`${method} ${path} not sent: interrupted`));
      return;
    }
    // Each read gets a buffer of its own (kept, not copied), and the answer is read from the one
    // buffer that holds it all, as it does when it comes in one read: no Buffer.from, concat or
    // subarray, whose code Node compiles on first use (about 0.5 % of a `status`).
    const chunks: Array<{ buf: Buffer; n: number }> = [];
    let done = false;
    let connected = false;
    const socket = connect({
      path: socketPath,
      onread: {
        buffer: () => Buffer.allocUnsafe(READ_BUFFER_BYTES),
        callback: (n, buf) => {
          chunks.push({ buf: buf as Buffer, n });
          // Done as soon as the announced length is in: a server that keeps the socket open costs nothing.
          settle(false);
          return true;
        },
      },
    });
    const deadline = new Int32Array(new SharedArrayBuffer(4));
    const finish = (err: Error | undefined, res?: ControlResponse) => {
      if (done) return;
      done = true;
      Atomics.notify(deadline, 0);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        socket.destroy();
        reject(err);
        return;
      }
      resolve(res!);
    };
    const settle = (ended: boolean) => {
      try {
        if (chunks.length > 1) chunks.splice(0, chunks.length, joined(chunks));
        const res = parseResponse(chunks[0]?.buf ?? Buffer.alloc(0), chunks[0]?.n ?? 0, ended);
        if (res) finish(undefined, res);
      } catch (err) {
        finish(err as Error);
      }
    };
    const wait = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync(deadline, 0, 0, timeoutMs);
    // A deadline of 0 is over at once, without a promise.
    void Promise.resolve(wait.value).then((outcome) => {
      if (outcome === 'timed-out') finish(new ControlTimeout(`no answer within ${timeoutMs} ms`));
      else socket.destroy();
    });
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
    // Closed with neither (not seen, but nothing else would keep the call from hanging).
    socket.on('close', () => {
      if (!done) settle(true);
    });
  });
}

/** The reads so far as one. */
function joined(chunks: Array<{ buf: Buffer; n: number }>): { buf: Buffer; n: number } {
  const buf = Buffer.concat(chunks.map((c) => c.buf.subarray(0, c.n)));
  return { buf, n: buf.length };
}

/**
 * The response in the first `len` bytes of `buf` when it is complete (at the end of the stream,
 * `ended`), else null. The head is read as latin1 (a character per byte) with string methods.
 */
function parseResponse(buf: Buffer, len: number, ended: boolean): ControlResponse | null {
  const head = buf.toString('latin1', 0, Math.min(len, HEAD_MAX_BYTES));
  const headEnd = head.indexOf('\r\n\r\n');
  if (headEnd < 0) {
    if (ended && len === 0) throw new ControlClosed('the connection closed before any answer came');
    if (ended && head.startsWith('HTTP/')) throw new ControlClosed('the connection closed before a whole answer came');
    if (ended || len > HEAD_MAX_BYTES) throw new Error('the answer is not HTTP');
    return null;
  }
  const lines = head.slice(0, headEnd).split('\r\n');
  const status = statusCode(lines[0]!);
  if (status === undefined) throw new Error('the answer is not HTTP');
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const bodyStart = headEnd + 4;
  let bodyEnd = len;
  const length = headers.get('content-length');
  if ((headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) {
    if (!ended) return null;
    return { status, text: dechunk(buf.subarray(bodyStart, len)).toString('utf8') };
  } else if (length !== undefined && digitsOnly(length)) {
    if (len - bodyStart < Number(length)) {
      if (ended) throw new ControlClosed('the connection closed before a whole answer came');
      return null;
    }
    bodyEnd = bodyStart + Number(length);
  } else if (!ended) return null;
  return { status, text: buf.toString('utf8', bodyStart, bodyEnd) };
}

/** The code of a status line `HTTP/1.0 NNN` or `HTTP/1.1 NNN` (/^HTTP\/1\.[01] (\d{3})/), else undefined. */
function statusCode(line: string): number | undefined {
  if (!line.startsWith('HTTP/1.0 ') && !line.startsWith('HTTP/1.1 ')) return undefined;
  const code = line.slice(9, 12);
  return code.length === 3 && digitsOnly(code) ? Number(code) : undefined;
}

/** /^\d+$/ */
function digitsOnly(text: string): boolean {
  if (text === '') return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
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
