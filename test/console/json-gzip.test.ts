import { describe, expect, it } from 'vitest';
import { createServer, request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { PreparedJson, sendJsonCompressed } from '../../src/console/http.js';

// Large API answers (a big group's face list) go gzipped to browsers that take it; small ones and
// clients without gzip get plain JSON.

async function fetchRaw(port: number, gzip: boolean): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', path: '/', headers: gzip ? { 'accept-encoding': 'gzip, br' } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject).end();
  });
}

describe('console JSON answers', () => {
  it('gzips large answers for browsers that accept it, and only those', async () => {
    const big = { faces: Array.from({ length: 300 }, (_, i) => ({ face_id: `f${i}`, name: `Person ${i}`, thumb_url: `/api/faces/f${i}/thumb?v=0123456789abcdef` })) };
    let body: unknown = big;
    const srv = createServer((req, res) => void sendJsonCompressed(req, res, 200, body));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    try {
      const gz = await fetchRaw(port, true);
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(gunzipSync(gz.body).toString())).toEqual(big);
      expect(gz.body.length).toBeLessThan(JSON.stringify(big).length / 5);
      const plain = await fetchRaw(port, false);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(plain.body.toString())).toEqual(big);
      body = { small: true };
      expect((await fetchRaw(port, true)).headers['content-encoding']).toBeUndefined();
    } finally {
      srv.close();
    }
  });

  it('sends a prepared answer as its text, gzipping it once however often it is asked for', async () => {
    const big = { faces: Array.from({ length: 300 }, (_, i) => ({ face_id: `f${i}`, name: `Person ${i}` })) };
    const prepared = new PreparedJson(JSON.stringify(big));
    const srv = createServer((req, res) => void sendJsonCompressed(req, res, 200, prepared));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    try {
      const first = await fetchRaw(port, true);
      expect(JSON.parse(gunzipSync(first.body).toString())).toEqual(big);
      const made = prepared.gzip;
      expect(made).toBeInstanceOf(Buffer);
      const second = await fetchRaw(port, true);
      expect(second.body.equals(first.body)).toBe(true);
      expect(prepared.gzip).toBe(made);
      expect(JSON.parse((await fetchRaw(port, false)).body.toString())).toEqual(big);
    } finally {
      srv.close();
    }
  });
});
