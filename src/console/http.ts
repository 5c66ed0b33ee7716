import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { AgentError, AudioDeviceError, RecorderError, isAgentError } from '../errors.js';
import { httpStatusFor } from '../control/control-errors.js';

// What every console answer shares: the security headers, one JSON error shape
// ({error: {code, message, hint}}) and bounded body reads.

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

export function securityHeaders(res: ServerResponse, tls: boolean): void {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  res.setHeader('cross-origin-resource-policy', 'same-origin');
  if (tls) res.setHeader('strict-transport-security', 'max-age=31536000');
}

/** An error with the HTTP status and the hint the page shows beside it. */
export class ConsoleHttpError extends AgentError {
  override readonly code: string;
  readonly status: number;
  readonly hint: string | undefined;
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, message: string, hint?: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.headers = headers;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonText(res, status, res.headersSent ? '' : JSON.stringify(body ?? null), headers);
}

function sendJsonText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const gzipAsync = promisify(gzip);

/** An answer's JSON text made (and kept) by its route, and its gzip once made: sent as it is. */
export class PreparedJson {
  gzip: Buffer | undefined;
  constructor(readonly text: string) {}
}
const GZIP_ABOVE = 8 * 1024;

/** sendJson, gzipped (in libuv's threads, off the event loop) when large and the browser takes it:
 * the face list of a big group goes to a phone over Wi-Fi in a fifth to a tenth of the bytes. At
 * zlib's fastest level: its face_ids and image versions are random hex, which no level compresses,
 * so a higher one costs CPU for nearly nothing. */
export async function sendJsonCompressed(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): Promise<void> {
  const prepared = body instanceof PreparedJson ? body : undefined;
  const text = prepared ? prepared.text : JSON.stringify(body ?? null);
  if (text.length < GZIP_ABOVE || !/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
    // The text already made, not a second JSON.stringify of a large group's list.
    sendJsonText(res, status, text);
    return;
  }
  const gz = prepared ? (prepared.gzip ??= await gzipAsync(text, { level: 1 })) : await gzipAsync(text, { level: 1 });
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-encoding': 'gzip', vary: 'accept-encoding', 'content-length': gz.length });
  res.end(gz);
}

export function errorStatus(err: unknown): number {
  if (err instanceof ConsoleHttpError) return err.status;
  // No sound card or microphone: the terminal cannot do it now, not a bug of the daemon.
  if (err instanceof AudioDeviceError || err instanceof RecorderError) return 503;
  return httpStatusFor(err);
}

/** The body of an error answer. Only our own messages (AgentError) are shown; never a stack. */
export function errorBody(err: unknown): { error: { code: string; message: string; hint?: string } } {
  if (err instanceof ConsoleHttpError) return { error: { code: err.code, message: err.message, ...(err.hint ? { hint: err.hint } : {}) } };
  if (isAgentError(err)) {
    const hint = typeof err.details.hint === 'string' ? err.details.hint : undefined;
    return { error: { code: err.code, message: err.message, ...(hint ? { hint } : {}) } };
  }
  return { error: { code: 'TA_ERR_FAILURE', message: 'internal error in the daemon; its log has the details', hint: 'journalctl -u terminal-agent' } };
}

export function sendError(res: ServerResponse, err: unknown): void {
  const headers = err instanceof ConsoleHttpError ? err.headers : {};
  sendJson(res, errorStatus(err), errorBody(err), headers);
}

export const badRequest = (message: string, hint?: string) => new ConsoleHttpError(400, 'TA_ERR_USAGE', message, hint);
export const notFound = (message: string, hint?: string) => new ConsoleHttpError(404, 'TA_ERR_NOT_FOUND', message, hint);

export async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) throw new ConsoleHttpError(413, 'TA_ERR_TOO_LARGE', `the request body is larger than ${max} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new ConsoleHttpError(413, 'TA_ERR_TOO_LARGE', `the request body is larger than ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function readJsonObject(req: IncomingMessage, max = 64 * 1024): Promise<Record<string, unknown>> {
  const text = (await readBody(req, max)).toString('utf8').trim();
  if (text === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw badRequest('the request body is not JSON');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw badRequest('the request body must be a JSON object');
  return v as Record<string, unknown>;
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

export function clientAddress(req: IncomingMessage): string {
  // No X-Forwarded-For: the console is reached directly; a header anyone can set must not pick
  // the rate-limit bucket.
  return req.socket.remoteAddress ?? 'unknown';
}
