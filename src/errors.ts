// Every error the agent raises is one of these classes. `code` is stable (scripts and tests match on
// it, like undici's UND_ERR_*), `exitCode` is the sysexits code of the product contract, and the
// original error is kept as `cause`. Messages say what went wrong, where, and how to fix it, and
// never contain a secret value.

export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 64,
  dataErr: 65,
  unavailable: 69,
  noPerm: 77,
  config: 78,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface AgentErrorOptions {
  cause?: unknown;
  /** Extra machine-readable facts (HTTP status, path, device...). Must not hold secrets. */
  details?: Record<string, unknown>;
}

export class AgentError extends Error {
  readonly code: string = 'TA_ERR_FAILURE';
  readonly exitCode: ExitCode = ExitCode.failure;
  readonly details: Record<string, unknown>;

  constructor(message: string, options: AgentErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.details = options.details ?? {};
  }

  toJSON(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.details };
  }
}

export class UsageError extends AgentError {
  override readonly code = 'TA_ERR_USAGE';
  override readonly exitCode = ExitCode.usage;
}

export interface ConfigProblem {
  /** Dotted key path, e.g. `service.request_timeout`; empty for the file itself. */
  path: string;
  message: string;
  file?: string;
  line?: number;
}

export class ConfigError extends AgentError {
  override readonly code = 'TA_ERR_CONFIG';
  override readonly exitCode = ExitCode.config;
  readonly problems: ConfigProblem[];

  constructor(problems: ConfigProblem[], options: AgentErrorOptions = {}) {
    super(formatProblems(problems), options);
    this.problems = problems;
  }
}

export function formatProblem(p: ConfigProblem): string {
  const where = p.file ? `${p.file}${p.line ? `:${p.line}` : ''}: ` : '';
  return `${where}${p.path ? `${p.path}: ` : ''}${p.message}`;
}

function formatProblems(problems: ConfigProblem[]): string {
  if (problems.length === 1) return `configuration error: ${formatProblem(problems[0]!)}`;
  return `${problems.length} configuration errors:\n${problems.map((p) => `  ${formatProblem(p)}`).join('\n')}`;
}

/** Input the operator gave (an image, a WAV, a name) that cannot be used as it is. */
export class InvalidInputError extends AgentError {
  override readonly code: string = 'TA_ERR_BAD_INPUT';
  override readonly exitCode = ExitCode.dataErr;
}

/** A recording that failed the quality gate (silence, clipping, too short). */
export class AudioQualityError extends InvalidInputError {
  override readonly code = 'TA_ERR_AUDIO_QUALITY';
}

/** A face image the face check refused (no face, several, too small, blurred, badly exposed). */
export class FaceQualityError extends InvalidInputError {
  override readonly code = 'TA_ERR_FACE_CHECK';
}

/** The face check could not run (its model or runtime did not load, or it stopped answering). */
export class FaceCheckUnavailableError extends AgentError {
  override readonly code = 'TA_ERR_FACE_CHECK_UNAVAILABLE';
  override readonly exitCode = ExitCode.unavailable;
}

/** An ALSA device that cannot be opened or failed while in use. */
export class AudioDeviceError extends AgentError {
  override readonly code = 'TA_ERR_AUDIO_DEVICE';
}

/** The recorder program (arecord/sox) is missing, produced nothing, or died. */
export class RecorderError extends AgentError {
  override readonly code = 'TA_ERR_RECORDER';
}

/** The daemon is not running (control socket absent) or another instance holds the state. */
export class DaemonError extends AgentError {
  override readonly code: string = 'TA_ERR_DAEMON';
}
export class AlreadyRunningError extends DaemonError {
  override readonly code = 'TA_ERR_ALREADY_RUNNING';
}

/** Work refused because the component is stopping or busy (e.g. the microphone is in use). */
export class BusyError extends AgentError {
  override readonly code = 'TA_ERR_BUSY';
}

/** A cache write would leave less free space than state_min_free (src/disk/disk-floor.ts). */
export class DiskFullError extends AgentError {
  override readonly code = 'TA_ERR_DISK_FULL';
}

export class AbortedError extends AgentError {
  override readonly code = 'TA_ERR_ABORTED';
}

// ---- Errors from the cloud service (the service client raises only these) ----

export interface ServiceErrorOptions extends AgentErrorOptions {
  /** HTTP status, when a response arrived. */
  status?: number;
  /** The server's own message, when it sent one. */
  serverMessage?: string;
  /** e.g. `POST /faces`. */
  operation?: string;
}

export class ServiceError extends AgentError {
  override readonly code: string = 'TA_ERR_SERVICE';
  override readonly exitCode: ExitCode = ExitCode.unavailable;
  readonly status: number | undefined;
  readonly serverMessage: string | undefined;
  readonly operation: string | undefined;
  /** True when repeating the same request later may succeed. */
  readonly retryable: boolean = false;
  /** Milliseconds the server asked us to wait (Retry-After), when it did. */
  retryAfterMs: number | undefined;

  constructor(message: string, options: ServiceErrorOptions = {}) {
    super(message, options);
    this.status = options.status;
    this.serverMessage = options.serverMessage;
    this.operation = options.operation;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), status: this.status ?? null, operation: this.operation };
  }
}

export class AuthError extends ServiceError {
  override readonly code = 'TA_ERR_AUTH';
  override readonly exitCode = ExitCode.noPerm;
}
export class NotFoundError extends ServiceError {
  override readonly code = 'TA_ERR_NOT_FOUND';
  override readonly exitCode = ExitCode.failure;
}
export class BadRequestError extends ServiceError {
  override readonly code = 'TA_ERR_BAD_REQUEST';
  override readonly exitCode = ExitCode.dataErr;
}
/** 5xx, 429, or a 2xx carrying a non-zero code that the server may clear on a retry. */
export class ServerError extends ServiceError {
  override readonly code = 'TA_ERR_SERVER';
  override readonly retryable: boolean = true;
}
/** Connection refused/reset, DNS failure: the request may never have reached the server. */
export class NetworkError extends ServiceError {
  override readonly code: string = 'TA_ERR_NETWORK';
  override readonly retryable = true;
  /** True when the failure happened before any byte of the request was sent. */
  readonly notSent: boolean;
  constructor(message: string, options: ServiceErrorOptions & { notSent?: boolean } = {}) {
    super(message, options);
    this.notSent = options.notSent ?? false;
  }
}
/**
 * A request not sent because a part of the program it needs (the client's undici, read at
 * the first request) was found gone: not the network's fault (exit 1, not 69), but like a request
 * that never left, an upload stays queued. `cause` is Node's MODULE_NOT_FOUND.
 */
export class ProgramReplacedError extends NetworkError {
  override readonly code = 'TA_ERR_PROGRAM_REPLACED';
  override readonly exitCode = ExitCode.failure;
}
export class TimeoutError extends ServiceError {
  override readonly code = 'TA_ERR_TIMEOUT';
  override readonly retryable = true;
}
/** A 2xx whose body is not what the API promises (bad JSON, not a WAV, non-zero code). */
export class BadResponseError extends ServiceError {
  override readonly code = 'TA_ERR_BAD_RESPONSE';
}

/** A TTS answer longer than tts.max_duration(_per_char) or larger than tts.max_size allow: cut there. */
export class TtsTooLongError extends ServiceError {
  override readonly code = 'TA_ERR_TTS_TOO_LONG';
}

/** A file the operator asked the CLI to write (`faces image -o`, `say --out`) that cannot be written. */
export class OutputFileError extends AgentError {
  override readonly code = 'TA_ERR_OUTPUT';
}

const FS_REASONS: Record<string, string> = {
  ENOENT: 'no such folder, or the folder takes no new files',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
};

/** An error of the file system (it names a path), as opposed to one of a socket. */
export function isFsError(err: unknown): err is NodeJS.ErrnoException & { path: string } {
  const e = err as NodeJS.ErrnoException | undefined;
  return typeof e?.code === 'string' && typeof e.path === 'string' && typeof e.syscall === 'string';
}

export function outputFileError(path: string, err: unknown): OutputFileError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const reason = code ? `${FS_REASONS[code] ?? describeError(err)} (${code})` : describeError(err);
  return new OutputFileError(`cannot write ${path}: ${reason}; choose a file in a folder this user can write to`, {
    cause: err, details: { path, ...(code ? { errno: code } : {}) },
  });
}

export function isAgentError(err: unknown): err is AgentError {
  return err instanceof AgentError;
}

/**
 * A file of the program found gone (Node's require of a bundle chunk, read only when first needed,
 * says MODULE_NOT_FOUND): another build was installed under this process, not a bug or a bad input.
 */
export function isProgramReplaced(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'MODULE_NOT_FOUND' || code === 'TA_ERR_PROGRAM_REPLACED';
}

/** The file that error found gone: Node names it relative to the module that required it (the first of its require stack). */
export function missingProgramFile(err: unknown): string {
  const e = err as { code?: unknown; cause?: unknown; message?: unknown; requireStack?: unknown } | null;
  if (e?.code === 'TA_ERR_PROGRAM_REPLACED') return missingProgramFile(e.cause);
  const name = typeof e?.message === 'string' ? /^Cannot find module '([^']+)'/.exec(e.message)?.[1] : undefined;
  if (name === undefined) return 'a file of the program';
  const from = Array.isArray(e?.requireStack) && typeof e.requireStack[0] === 'string' ? e.requireStack[0] : undefined;
  return name.startsWith('./') && from !== undefined ? `${from.slice(0, from.lastIndexOf('/'))}/${name.slice(2)}` : name;
}

/** Why a signal ended some work, for a message: its reason's text ('SIGINT', 'caller hung up'). */
export function abortReason(signal: AbortSignal | undefined, fallback: string): string {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason.message : fallback;
}

/** A command cut short by `signal` (Ctrl-C): `interrupted: SIGINT; ` and what became of its work. */
export function interruptedError(signal: AbortSignal, what: string, cause?: unknown): AbortedError {
  return new AbortedError(`interrupted: ${abortReason(signal, 'stopped')}; ${what}`, cause === undefined ? {} : { cause });
}

/** Exit code for anything thrown out of a command. */
export function exitCodeOf(err: unknown): ExitCode {
  return isAgentError(err) ? err.exitCode : ExitCode.failure;
}

/** A short, secret-free description of any thrown value, for logs and error files. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
