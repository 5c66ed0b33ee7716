import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { JPEG_BYTES, writeFixture, writeWav } from './fixtures.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { clientFor, json, startHostileService } from '../helpers/hostile-service.js';
import { InvalidInputError } from '../../src/errors.js';
import { multipartBody, WHOLE_READ_MAX } from '../../src/client/multipart.js';

// What goes on the wire for an upload, read byte for byte by a plain node:http server: the length
// is announced (no chunked encoding), every file part carries a filename and the Content-Type of
// its bytes, text fields are plain parts, and a file on disk is sent as it was when the upload began
// (a small one read whole at once, a large one streamed and checked against its size and mtime).

let tmp: { dir: string; remove(): void };
beforeAll(() => { tmp = tmpDirManual('ta-client-multipart-'); });
afterAll(() => tmp.remove());

interface Seen { headers: IncomingMessage['headers']; body: Buffer }

function capture(seen: Seen[], answer: unknown) {
  return async (req: IncomingMessage, res: Parameters<typeof json>[0]) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
    json(res, answer);
  };
}

/** The parts of a multipart body: their header lines (lower-cased names) and bytes. */
function parts(seen: Seen): Array<{ headers: Record<string, string>; data: Buffer }> {
  const boundary = /boundary=(.+)$/.exec(seen.headers['content-type'] ?? '')![1]!;
  const body = seen.body.toString('latin1');
  expect(body.endsWith(`--${boundary}--\r\n`)).toBe(true);
  return body.split(`--${boundary}`).slice(1, -1).map((raw) => {
    const [head, ...rest] = raw.slice(2, -2).split('\r\n\r\n');
    const headers = Object.fromEntries(head!.split('\r\n').map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    return { headers, data: Buffer.from(rest.join('\r\n\r\n'), 'latin1') };
  });
}

describe('multipart uploads on the wire', () => {
  it('an image held in memory goes as one body with Content-Length; the file part has its filename and type', async () => {
    const seen: Seen[] = [];
    const svc = await startHostileService({ '/v1/api/faces': capture(seen, { return_code: 0, return_message: 'ok' }) });
    const { client } = clientFor(svc);
    await client.createFace({ name: 'Zoë "Z"', image: { path: '/nowhere/zoe.jpg', contentType: 'image/jpeg', bytes: JPEG_BYTES } });

    const [req] = seen;
    expect(req!.headers['content-length']).toBe(String(req!.body.length));
    expect(req!.headers['transfer-encoding']).toBeUndefined();
    expect(req!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const [name, image, ...more] = parts(req!);
    expect(more).toEqual([]);
    expect(name!.headers).toEqual({ 'content-disposition': 'form-data; name="name"' });
    expect(name!.data.toString('utf8')).toBe('Zoë "Z"');
    expect(image!.headers).toEqual({ 'content-disposition': 'form-data; name="image"; filename="zoe.jpg"', 'content-type': 'image/jpeg' });
    expect(image!.data.equals(JPEG_BYTES)).toBe(true);
  });

  it('a file larger than WHOLE_READ_MAX given by path is read from disk as it is sent, with its length announced and its bytes intact', async () => {
    const wav = writeWav(tmp.dir, 'voice sample.wav', 12);
    expect(statSync(wav).size).toBeGreaterThan(WHOLE_READ_MAX);
    const seen: Seen[] = [];
    const svc = await startHostileService({ '/train_speaker': capture(seen, { code: 0, message: 'ok', speaker_id: 'spk-1' }) });
    const { client } = clientFor(svc, { request_timeout: 10_000 });
    await expect(client.trainSpeaker({ audio: { path: wav, contentType: 'audio/wav' }, model: 'tts-turbo', audioText: 'line one\nline two' }))
      .resolves.toMatchObject({ speaker_id: 'spk-1' });

    const [req] = seen;
    expect(req!.headers['content-length']).toBe(String(req!.body.length));
    expect(req!.headers['transfer-encoding']).toBeUndefined();
    const byName = Object.fromEntries(parts(req!).map((p) => [/name="([^"]+)"/.exec(p.headers['content-disposition']!)![1], p]));
    expect(byName.model!.data.toString()).toBe('tts-turbo');
    // Line breaks in a text field are sent as CRLF, as a browser's form (and undici's FormData) does.
    expect(byName.audio_text!.data.toString()).toBe('line one\r\nline two');
    expect(byName.audio!.headers).toEqual({ 'content-disposition': 'form-data; name="audio"; filename="voice sample.wav"', 'content-type': 'audio/wav' });
    expect(byName.audio!.data.equals(readFileSync(wav))).toBe(true);
  });

  it('a small file given by path is read once, when the upload begins: a retry sends the same bytes though the file changed meanwhile', async () => {
    const path = writeFixture(tmp.dir, 'retried.jpg', JPEG_BYTES);
    const faceId = 'a'.repeat(32);
    const seen: Seen[] = [];
    const svc = await startHostileService({
      [`/v1/api/faces/${faceId}`]: async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
        if (seen.length === 1) {
          // The operator's tool rewrites the file while the first attempt is answered 503.
          appendFileSync(path, Buffer.alloc(100, 1));
          res.writeHead(503, { 'retry-after': '0' }).end();
          return;
        }
        json(res, { return_code: 0, return_message: 'ok' });
      },
    });
    const { client } = clientFor(svc, { retries: 2 });
    await client.updateFace(faceId, { name: 'Bob', image: { path, contentType: 'image/jpeg' } });

    expect(seen).toHaveLength(2);
    for (const attempt of seen) {
      const image = parts(attempt).find((p) => p.headers['content-disposition']!.includes('name="image"'))!;
      expect(image.data.equals(JPEG_BYTES)).toBe(true);
    }
    expect(statSync(path).size).toBe(JPEG_BYTES.length + 100);
  });

  it('a large file that changes after the body was built fails the upload as bad input, not as a mix of two versions', async () => {
    const path = writeFixture(tmp.dir, 'growing.jpg', JPEG_BYTES);
    const body = await multipartBody({ name: 'x' }, { image: { path, contentType: 'image/jpeg' } })();
    appendFileSync(path, Buffer.alloc(10));
    if (Buffer.isBuffer(body.data)) throw new Error('a file part should be read as it is sent');
    const read = async () => {
      for await (const chunk of (body.data as { chunks(): AsyncIterable<Buffer> }).chunks()) void chunk;
    };
    const err = await read().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as Error).message).toBe(`image: ${path} changed while it was being uploaded; upload a file nothing else writes to`);
  });
});
