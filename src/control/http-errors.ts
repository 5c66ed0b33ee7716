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

export function httpStatusFor(err: unknown): number {
  if (err instanceof RouteNotFound) return 404;
  if (err instanceof MethodNotAllowed) return 405;
  if (err instanceof UsageError || err instanceof InvalidInputError || err instanceof BadRequestError) return 400;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof BusyError) return 409;
  if (err instanceof AbortedError) return 503;
  if (err instanceof TimeoutError) return 504;
  // The service refused the agent's credentials or is down: a gateway problem, not the caller's.
  if (err instanceof AuthError || err instanceof ServiceError) return 502;
  if (err instanceof ConfigError) return 500;
  return 500;
}

export function errorBody(err: unknown): ControlErrorBody {
  if (isAgentError(err)) {
    const body = { ...err.toJSON(), exit_code: err.exitCode } as ControlErrorBody;
    if (err instanceof ConfigError) body.problems = err.problems;
    return body;
  }
  // Not one of ours: a bug. Say so without leaking internals (stack goes to the daemon's log).
  return { error: `internal error in the daemon: ${(err as Error)?.message ?? String(err)}`, code: 'TA_ERR_FAILURE', exit_code: 1 };
}

/** No such route on the control socket. */
export class RouteNotFound extends UsageError {}
export class MethodNotAllowed extends UsageError {}

export { AgentError };
