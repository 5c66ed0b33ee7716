import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

// The built pages (dist/web/: index.html and assets/), served from memory after the first read,
// gzipped once when the browser takes it. Nothing is fetched from elsewhere: the page works with
// no internet. Assets are referenced with ?v=<hash>, so they may be cached for good; index.html is
// revalidated (ETag) so that a new build is seen at once.

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.webmanifest': 'application/manifest+json',
  '.map': 'application/json',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.svg', '.json', '.map', '.webmanifest']);

interface Entry {
  body: Buffer;
  gz: Buffer | undefined;
  etag: string;
  type: string;
}

const NOT_BUILT = `<!doctype html><html lang="en"><meta charset="utf-8"><title>terminal-agent console</title>
<body><h1>The console's pages are not built</h1><p>This copy of terminal-agent has the console server but not its
pages (dist/web/). Build them with <code>npm run build</code> in the source tree, or install a release package.</p>
<p>The JSON API answers under <code>/api/</code>.</p></body></html>`;

export function createStaticFiles(webDir: string) {
  const cache = new Map<string, Promise<Entry | undefined>>();
  const gzipAsync = promisify(gzip);

  async function load(rel: string): Promise<Entry | undefined> {
    let body: Buffer;
    try {
      body = await readFile(join(webDir, rel));
    } catch {
      return undefined;
    }
    const ext = extname(rel).toLowerCase();
    const gz = COMPRESSIBLE.has(ext) && body.length > 1024 ? await gzipAsync(body, { level: 9 }) : undefined;
    return { body, gz, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`, type: TYPES[ext] ?? 'application/octet-stream' };
  }

  function entry(rel: string): Promise<Entry | undefined> {
    let p = cache.get(rel);
    if (!p) {
      p = load(rel);
      cache.set(rel, p);
      // A missing file is looked for again next time (the pages may be built after the start).
      p.then((e) => {
        if (!e) cache.delete(rel);
      }, () => cache.delete(rel));
    }
    return p;
  }

  return {
    /** Serves `/` or `/assets/...`; false when the path is not a static file. */
    async serve(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<boolean> {
      let rel: string;
      if (pathname === '/' || pathname === '/index.html') rel = 'index.html';
      else if (pathname.startsWith('/assets/')) {
        // A malformed escape (`%zz`) names no file.
        try {
          rel = normalize(decodeURIComponent(pathname.slice(1)));
        } catch {
          return false;
        }
        if (rel.startsWith('..') || rel.includes(`${sep}..`) || !rel.startsWith(`assets${sep}`)) return false;
      } else return false;
      const e = await entry(rel);
      if (!e) {
        if (rel !== 'index.html') return false;
        res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        res.end(NOT_BUILT);
        return true;
      }
      const immutable = rel !== 'index.html' && /[?&]v=/.test(req.url ?? '');
      const headers: Record<string, string> = {
        'content-type': e.type,
        etag: e.etag,
        'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
        vary: 'accept-encoding',
      };
      if (req.headers['if-none-match'] === e.etag) {
        res.writeHead(304, headers);
        res.end();
        return true;
      }
      const useGz = e.gz !== undefined && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      const body = useGz ? e.gz! : e.body;
      res.writeHead(200, { ...headers, ...(useGz ? { 'content-encoding': 'gzip' } : {}), 'content-length': String(body.length) });
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    },
  };
}
