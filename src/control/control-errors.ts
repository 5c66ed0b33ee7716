import {
  AbortedError, AgentError, AuthError, BadRequestError, BusyError, ConfigError, InvalidInputError,
  NotFoundError, ServiceError, TimeoutError, UsageError, isAgentError,
} from '../errors.js';

// How errors cross the control socket: the body is the error's toJSON() plus its exit code, so the
// CLI on the other side exits exactly as if it had made the call itself; the HTTP status tells other
// programs on the terminal the class of problem without parsing the body.

export interface ControlErrorBody {
  error: string;
  code: string;
  exit_code: number;
  [key: string]: unknown;
}

/** No such route on the control socket. */
export class RouteNotFound extends UsageError {}

export class MethodNotAllowed extends UsageError {
  constructor(message: string, readonly allowed: string) {
    super(message);
  }
}

/** A request the socket refuses before any handler sees it (too large, not a URL): its own status. */
export class RequestRefused extends UsageError {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export function httpStatusFor(err: unknown): number {
  if (err instanceof RequestRefused) return err.status;
  if (err instanceof RouteNotFound) return 404;
  if (err instanceof MethodNotAllowed) return 405;
  if (err instanceof UsageError || err instanceof InvalidInputError || err instanceof BadRequestError) return 400;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof BusyError) return 409;
  if (err instanceof AbortedError) return 503;
  if (err instanceof TimeoutError) return 504;
  // The service refused the agent's credentials or is down: a gateway problem, not the caller's.
  if (err instanceof AuthError || err instanceof ServiceError) return 502;
  return 500;
}

export function errorBody(err: unknown): ControlErrorBody {
  if (isAgentError(err)) {
    const body = { ...err.toJSON(), exit_code: err.exitCode } as ControlErrorBody;
    if (err instanceof ConfigError) body.problems = err.problems;
    return body;
  }
  // Not one of ours: a bug. The message and stack go to the daemon's log, not to the caller: a
  // message from deep inside (a path, a value) is no business of whoever is on the socket.
  return { error: "internal error in the daemon; its log has the details (journalctl -u terminal-agent)", code: 'TA_ERR_FAILURE', exit_code: 1 };
}

/** Whether an error is the daemon's own fault (logged as an error) rather than the caller's. */
export function isUnexpected(err: unknown): boolean {
  return !(err instanceof AgentError);
}
