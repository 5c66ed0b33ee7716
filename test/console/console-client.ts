import { request } from 'node:http';

// A small HTTP client for the console API over loopback, with a cookie jar, that keeps every
// answer it saw (status, headers, body) so a test can search them all for secrets at the end.

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
  json: () => any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface ConsoleClient {
  base: string;
  csrf: string | undefined;
  cookie: string | undefined;
  seen: Answer[];
  call(method: string, path: string, opts?: { body?: Buffer | string | object; headers?: Record<string, string>; noCookie?: boolean; noCsrf?: boolean }): Promise<Answer>;
  login(password: string): Promise<Answer>;
}

export function consoleClient(base: string): ConsoleClient {
  const c: ConsoleClient = {
    base,
    csrf: undefined,
    cookie: undefined,
    seen: [],
    call(method, path, opts = {}) {
      const url = new URL(path, base);
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (c.cookie && !opts.noCookie) headers.cookie = c.cookie;
      if (c.csrf && !opts.noCsrf && method !== 'GET') headers['x-csrf-token'] = c.csrf;
      let payload: Buffer | undefined;
      if (opts.body !== undefined) {
        payload = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
        if (!Buffer.isBuffer(opts.body) && typeof opts.body !== 'string') headers['content-type'] = 'application/json';
        headers['content-length'] = String(payload.length);
      }
      return new Promise((resolve, reject) => {
        const req = request(url, { method, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (b: Buffer) => chunks.push(b));
          res.on('end', () => {
            const body = Buffer.concat(chunks);
            const set = res.headers['set-cookie'];
            if (set) {
              const first = set[0]!.split(';')[0]!;
              c.cookie = first.endsWith('=') ? undefined : first;
            }
            const a: Answer = { status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString('utf8'), json: () => JSON.parse(body.toString('utf8')) };
            c.seen.push(a);
            resolve(a);
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    async login(password) {
      const a = await c.call('POST', '/api/login', { body: { password } });
      if (a.status === 200) c.csrf = a.json().csrf_token;
      return a;
    },
  };
  return c;
}
