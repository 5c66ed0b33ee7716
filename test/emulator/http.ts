import { request } from 'undici';

// Plain HTTP calls for emulator tests: the emulator is judged from the outside, as a client sees it.

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON answers
  json(): any;
}

export interface CallOptions {
  token?: string;
  json?: unknown;
  rawBody?: string | Buffer;
  contentType?: string;
  form?: FormData;
  headers?: Record<string, string>;
}

export async function call(url: string, method: string, opts: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.rawBody !== undefined) {
    if (opts.contentType) headers['content-type'] = opts.contentType;
    body = opts.rawBody;
  } else if (opts.form) {
    // Encoded by node's own fetch Response, then sent as bytes: on Node 24, undici's request given
    // its FormData holding node's Blob fails inside node's copy of undici ("action is not a function").
    const encoded = new Response(opts.form);
    headers['content-type'] = encoded.headers.get('content-type')!;
    body = Buffer.from(await encoded.arrayBuffer());
  }
  const res = await request(url, { method: method as 'GET', headers, body });
  const buf = Buffer.from(await res.body.arrayBuffer());
  return {
    status: res.statusCode,
    headers: res.headers,
    body: buf,
    json: () => JSON.parse(buf.toString('utf8')),
  };
}

export function form(fields: Record<string, string>, files: Record<string, { data: Buffer; filename: string; type: string }> = {}): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  for (const [k, v] of Object.entries(files)) f.append(k, new Blob([v.data], { type: v.type }), v.filename);
  return f;
}
