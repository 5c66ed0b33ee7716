// The console's only way to the daemon: same-origin fetches of /api/*, the CSRF token on every
// change, and one error shape ({code, message, hint}) for every failure, network ones included.

export interface ApiErrorBody {
  code: string;
  message: string;
  hint?: string;
}

export class ApiError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly status: number;
  readonly retryAfter: number | undefined;
  constructor(status: number, body: ApiErrorBody, retryAfter?: number) {
    super(body.message);
    this.code = body.code;
    this.hint = body.hint;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

export interface Session {
  authenticated: boolean;
  login_required: boolean;
  csrf_token?: string;
}

interface ClientState {
  csrf: string | undefined;
  onUnauthorized: () => void;
}

const state: ClientState = { csrf: undefined, onUnauthorized: () => {} };

export function setCsrf(token: string | undefined): void {
  state.csrf = token;
}

/** Called when any request answers 401: the session ended (logout elsewhere, daemon restart). */
export function onUnauthorized(cb: () => void): void {
  state.onUnauthorized = cb;
}

async function request<T>(method: string, path: string, body?: BodyInit | object, contentType?: string): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET' && state.csrf) headers['x-csrf-token'] = state.csrf;
  let payload: BodyInit | undefined;
  if (body instanceof Blob) {
    payload = body;
    headers['content-type'] = contentType ?? 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, {
      code: 'E_CONSOLE_UNREACHABLE',
      message: 'The terminal did not answer.',
      hint: 'Check that terminal-agent is running (systemctl status terminal-agent) and that this device can reach it.',
    });
  }
  if (res.status === 401 && path !== '/api/login') state.onUnauthorized();
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const err = (json as { error?: ApiErrorBody } | undefined)?.error;
    const retry = Number(res.headers.get('retry-after'));
    throw new ApiError(res.status, err ?? { code: `HTTP_${res.status}`, message: `The terminal answered ${res.status} ${res.statusText}.` }, Number.isFinite(retry) && retry > 0 ? retry : undefined);
  }
  return json as T;
}

export const api = {
  get: <T>(path: string) => request<T>('GET', path),
  post: <T>(path: string, body?: object) => request<T>('POST', path, body ?? {}),
  upload: <T>(path: string, file: Blob) => request<T>('POST', path, file, file.type || 'application/octet-stream'),
};

/** A query string from the non-empty values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
