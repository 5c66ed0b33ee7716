import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { AgentError } from '../errors.js';

// Handlers are functions from a request context to a Reply; the server writes the Reply (and is
// where faults shape it). Errors meant for the client are AgentErrors carrying `httpStatus`.

export type ReplyBody = Buffer | Readable | AsyncIterable<Buffer>;

export interface Reply {
  status: number;
  headers?: Record<string, string | number>;
  body?: ReplyBody;
}

/** Face endpoints answer errors as {return_code, return_message}; the others as {code, message}. */
export type ErrorStyle = 'faces' | 'code';

export interface RequestContext {
  req: IncomingMessage;
  method: string;
  path: string;
  query: URLSearchParams;
  params: Record<string, string>;
  /** The request body, counted; consume it at most once. */
  body(): Readable;
}

export type Handler = (ctx: RequestContext) => Promise<Reply> | Reply;

export interface Route {
  method: string;
  /** Segments; `:name` captures one segment. */
  pattern: string;
  errorStyle: ErrorStyle;
  handler: Handler;
}

export function httpError(status: number, message: string, headers?: Record<string, string>): AgentError {
  return new AgentError(message, { details: { httpStatus: status, ...(headers ? { httpHeaders: headers } : {}) } });
}

export function jsonReply(status: number, value: unknown, headers: Record<string, string | number> = {}): Reply {
  const body = Buffer.from(JSON.stringify(value));
  return { status, headers: { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length, ...headers }, body };
}

export function errorReply(style: ErrorStyle, status: number, message: string, headers: Record<string, string | number> = {}): Reply {
  return jsonReply(status, style === 'faces' ? { return_code: status, return_message: message } : { code: status, message }, headers);
}

/** Turns anything a handler threw into the answer a client sees; unexpected errors become 500. */
export function replyForError(style: ErrorStyle, err: unknown): { reply: Reply; unexpected: boolean } {
  if (err instanceof AgentError && typeof err.details.httpStatus === 'number') {
    const headers = (err.details.httpHeaders ?? {}) as Record<string, string>;
    return { reply: errorReply(style, err.details.httpStatus, err.message, headers), unexpected: false };
  }
  return { reply: errorReply(style, 500, 'internal server error'), unexpected: true };
}

export async function readBody(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > limit) throw httpError(413, `request body over ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Parses a JSON body; `allowEmpty` lets an empty body count as {}. Only objects are accepted. */
export async function readJsonObject(ctx: RequestContext, opts: { allowEmpty?: boolean } = {}): Promise<Record<string, unknown>> {
  const raw = (await readBody(ctx.body(), 1024 * 1024)).toString('utf8');
  if (raw.trim() === '') {
    if (opts.allowEmpty) return {};
    throw httpError(400, 'request body is empty; send a JSON object');
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw httpError(400, 'request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw httpError(400, 'request body must be a JSON object');
  return value as Record<string, unknown>;
}

export function isMultipart(ctx: RequestContext): boolean {
  return /^multipart\/form-data\b/i.test(ctx.req.headers['content-type'] ?? '');
}

export function isJson(ctx: RequestContext): boolean {
  return /^application\/(.+\+)?json\b/i.test(ctx.req.headers['content-type'] ?? '');
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

export interface Router {
  /** `allowed` lists the methods of a path that exists under another method (for 405). */
  match(method: string, path: string): { found: RouteMatch } | { allowed: string[] } | undefined;
}

export function createRouter(routes: readonly Route[]): Router {
  const compiled = routes.map((r) => ({ route: r, parts: r.pattern.split('/').filter(Boolean) }));
  const matchParts = (parts: string[], segs: string[]): Record<string, string> | undefined => {
    if (parts.length !== segs.length) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      const s = segs[i]!;
      if (p.startsWith(':')) {
        try {
          params[p.slice(1)] = decodeURIComponent(s);
        } catch {
          return undefined;
        }
      } else if (p !== s) return undefined;
    }
    return params;
  };
  return {
    match(method, path) {
      const segs = path.split('/').filter(Boolean);
      const allowed: string[] = [];
      for (const c of compiled) {
        const params = matchParts(c.parts, segs);
        if (!params) continue;
        if (c.route.method === method) return { found: { route: c.route, params } };
        allowed.push(c.route.method);
      }
      return allowed.length > 0 ? { allowed } : undefined;
    },
  };
}
