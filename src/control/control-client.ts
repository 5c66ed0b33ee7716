import { connect } from 'node:net';
import { request } from 'node:http';
import {
  AbortedError, AgentError, AudioDeviceError, AudioQualityError, AuthError, BadRequestError,
  BadResponseError, BusyError, DaemonError, InvalidInputError, NetworkError, NotFoundError,
  RecorderError, ServerError, ServiceError, TimeoutError, UsageError,
} from '../errors.js';
import type { AgentStatus, SayBody, VoiceprintEnrollBody } from './types.js';

// What the CLI (and any Node program on the terminal) uses to talk to the running daemon.

export interface ControlResponse {
  status: number;
  text: string;
}

/** The call took longer than its deadline. */
export class ControlTimeout extends Error {}

/** The caller's signal ended the call: the connection is closed, which the daemon takes as a hang-up. */
export class ControlAborted extends Error {}

/**
 * The daemon's end closed (or reset) the connection before a whole answer came: it stopped,
 * crashed or restarted during the call, which may have had its effect by then.
 */
export class ControlClosed extends Error {}

/**
 * One HTTP exchange with the daemon over its unix socket (node:http, a connection of its own, not
 * kept alive): the status and the body as text, within `timeoutMs` from start to end.
 */
export function controlRequest(socketPath: string, method: string, path: string, payload: string | undefined, timeoutMs: number, signal?: AbortSignal): Promise<ControlResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ControlAborted(`${method} ${path} not sent: interrupted`));
      return;
    }
    let done = false;
    const headers: Record<string, string | number> = { connection: 'close' };
    if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    // Connected by hand rather than through an Agent: an Agent names the TLS server of every
    // connection (an IPv6 address test whose regular expression V8 compiles first, several ms of
    // the `status` command's start) even on a unix socket.
    const req = request({ createConnection: () => connect(socketPath), method, path, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => finish(undefined, { status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
      // The daemon went away in the middle of its answer.
      res.on('aborted', () => finish(new ControlClosed('the connection closed before a whole answer came')));
      res.on('error', () => finish(new ControlClosed('the connection closed before a whole answer came')));
    });
    const finish = (err: Error | undefined, res?: ControlResponse) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(res!);
    };
    const timer = setTimeout(() => finish(new ControlTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => finish(new ControlAborted(`${method} ${path} interrupted before the daemon answered`));
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) => {
      // Once connected, a reset, a broken pipe or a hang-up is the daemon's end going away.
      const gone = err.code === 'ECONNRESET' || err.code === 'EPIPE';
      if (gone) finish(new ControlClosed(`the connection was closed (${err.code}) before an answer came`, { cause: err }));
      else if (err.code?.startsWith('HPE_')) finish(new Error(`the answer is not HTTP (${err.message})`, { cause: err }));
      else finish(err);
    });
    req.end(payload);
  });
}

export interface ControlClient {
  readonly socketPath: string;
  status(): Promise<AgentStatus>;
  faces(): Promise<unknown[]>;
  /** A whole sync; with `face_id`, that one face fetched at once (the daemon's SyncReport either way). */
  syncFaces(body?: { face_id: string }): Promise<unknown>;
  say(body: SayBody): Promise<unknown>;
  enrollVoiceprint(body: VoiceprintEnrollBody): Promise<unknown>;
  metrics(): Promise<string>;
}

export interface ControlCallOptions {
  /** Overall deadline per call, ms (default 10 min: /say and /voiceprint/enroll wait for the audio). */
  timeoutMs?: number;
  /**
   * Ends a call early (the CLI's Ctrl-C): the connection closes, and the daemon takes that as the
   * caller hanging up (a phrase of `say` is cut or dropped from the queue, a recording stopped).
   */
  signal?: AbortSignal;
}

/** Connects to the daemon's control socket; throws DaemonError when no daemon answers there. */
export async function connectControl(socketPath: string, options: ControlCallOptions = {}): Promise<ControlClient> {
  if (!(await daemonAnswers(socketPath))) throw notRunning(socketPath);
  return controlClient(socketPath, options);
}

/** The client when a daemon answers on `socketPath`, else undefined (for "use the daemon if it runs"). */
export async function tryConnectControl(socketPath: string, options: ControlCallOptions = {}): Promise<ControlClient | undefined> {
  return (await daemonAnswers(socketPath)) ? controlClient(socketPath, options) : undefined;
}

export function daemonAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * The client without asking first whether a daemon answers: one connection per call. A call fails
 * with DaemonNotRunningError when nothing listens there (`status` then loads the config in full).
 */
export function controlClient(socketPath: string, options: ControlCallOptions = {}): ControlClient {
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  const call = async (method: string, path: string, body?: unknown): Promise<ControlResponse> => {
    try {
      return await controlRequest(socketPath, method, path, body === undefined ? undefined : JSON.stringify(body), timeoutMs, options.signal);
    } catch (err) {
      if (err instanceof ControlAborted) throw new AbortedError(err.message, { cause: err });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ECONNREFUSED') throw notRunning(socketPath, err);
      if (err instanceof ControlClosed) throw closedError(socketPath, method, path, err);
      if (err instanceof ControlTimeout) throw new DaemonError(`the daemon did not answer ${method} ${path} within ${Math.round(timeoutMs / 1000)}s on ${socketPath}; check 'journalctl -u terminal-agent'`, { cause: err });
      throw new DaemonError(`control socket ${socketPath}: ${(err as Error).message}`, { cause: err });
    }
  };
  const json = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const { status, text } = await call(method, path, body);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new DaemonError(`the daemon answered ${method} ${path} with status ${status} and a body that is not JSON`, { cause: err });
    }
    if (status >= 400) throw remoteError(value, status);
    return value as T;
  };
  return {
    socketPath,
    status: () => json<AgentStatus>('GET', '/status'),
    faces: () => json<unknown[]>('GET', '/faces'),
    syncFaces: (body?: { face_id: string }) => json<unknown>('POST', '/faces/sync', body),
    say: (body) => json<unknown>('POST', '/say', body),
    enrollVoiceprint: (body) => json<unknown>('POST', '/voiceprint/enroll', body),
    async metrics() {
      const { status, text } = await call('GET', '/metrics');
      if (status >= 400) throw remoteError(safeParse(text), status);
      return text;
    },
  };
}

/** Nothing answers on the control socket (no file there, or nobody listening). */
export class DaemonNotRunningError extends DaemonError {}

function notRunning(socketPath: string, cause?: unknown): DaemonError {
  return new DaemonNotRunningError(`no terminal-agent daemon is running (nothing answers on ${socketPath}); start it with 'systemctl start terminal-agent' or 'terminal-agent run', or check control.socket in the config`, { cause, details: { socket: socketPath } });
}

/** What a POST may have done before the daemon went away, and how to find out. */
const MAY_HAVE_DONE: Record<string, string> = {
  '/say': 'the phrase may have been spoken, in whole or in part',
  '/voiceprint/enroll': "the voiceprint may have been recorded and registered: 'terminal-agent voiceprint list' shows it if the daemon stored it; check there before enrolling the name again",
  '/faces/sync': "the sync may have run in whole or in part: 'terminal-agent status' shows the last face sync once the daemon runs again",
};

/**
 * The daemon's end of the connection closed before its answer (it stopped, crashed or restarted
 * under the call). A GET changed nothing; a POST may have had its effect, which the message says.
 */
function closedError(socketPath: string, method: string, path: string, cause: ControlClosed): DaemonError {
  const changes = method !== 'GET';
  const effect = changes
    ? `the request may have taken effect before that: ${MAY_HAVE_DONE[path] ?? "check with 'terminal-agent status' before repeating it"}`
    : 'nothing was changed: run the command again once the daemon runs';
  return new DaemonError(
    `the daemon closed the connection on ${socketPath} without answering ${method} ${path}: it most likely stopped, crashed or restarted meanwhile; see 'systemctl status terminal-agent' and 'journalctl -u terminal-agent'. ${effect}`,
    { cause, details: { socket: socketPath, request: `${method} ${path}`, may_have_taken_effect: changes } },
  );
}

type ErrorCtor = new (message: string, options?: { details?: Record<string, unknown>; status?: number; operation?: string }) => AgentError;
const BY_CODE: Record<string, ErrorCtor> = {
  TA_ERR_USAGE: UsageError, TA_ERR_BAD_INPUT: InvalidInputError, TA_ERR_AUDIO_QUALITY: AudioQualityError,
  TA_ERR_AUDIO_DEVICE: AudioDeviceError, TA_ERR_RECORDER: RecorderError, TA_ERR_DAEMON: DaemonError,
  TA_ERR_BUSY: BusyError, TA_ERR_ABORTED: AbortedError, TA_ERR_SERVICE: ServiceError, TA_ERR_AUTH: AuthError,
  TA_ERR_NOT_FOUND: NotFoundError, TA_ERR_BAD_REQUEST: BadRequestError, TA_ERR_SERVER: ServerError,
  TA_ERR_NETWORK: NetworkError, TA_ERR_TIMEOUT: TimeoutError, TA_ERR_BAD_RESPONSE: BadResponseError,
};

/** Rebuilds the daemon's error as the same class, so the CLI exits with the same code. */
function remoteError(value: unknown, httpStatus: number): AgentError {
  const body = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const message = typeof body.error === 'string' ? body.error : `the daemon answered HTTP ${httpStatus}`;
  const code = typeof body.code === 'string' ? body.code : '';
  const { error: _e, code: _c, exit_code: _x, ...details } = body;
  const Ctor = BY_CODE[code] ?? DaemonError;
  const status = typeof body.status === 'number' ? body.status : undefined;
  return new Ctor(message, { details, status, operation: typeof body.operation === 'string' ? body.operation : undefined });
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
