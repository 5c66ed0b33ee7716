import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { BadResponseError, TimeoutError } from '../../src/errors.js';
import { MAX_BUFFERED_BYTES, PACE_MIN_BYTES } from '../../src/client/body-limits.js';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { clientFor, drip, json, startHostileService } from '../helpers/hostile-service.js';

// The client against a service that lies or never stops (test/helpers/hostile-service.ts).

const ID = (n: number) => n.toString(16).padStart(32, '0');

function wavHeader(dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(16000, 24);
  h.writeUInt32LE(32000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

async function drain(body: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const c of body) n += (c as Buffer).length;
  return n;
}

/** Writes a JSON array of `count` face records, respecting backpressure, until the client leaves. */
async function writeListing(res: ServerResponse, count: number, pad = 0): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('[');
  const filler = 'x'.repeat(pad);
  for (let i = 0; i < count && !res.destroyed; i++) {
    const ok = res.write(`${i ? ',' : ''}{"face_id":"${ID(i + 1)}","group_id":"g","id":${i + 1},"name":"n${i}${filler}"}`);
    if (!ok) {
      await new Promise<void>((r) => {
        const done = () => { res.off('drain', done); res.off('close', done); r(); };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  if (!res.destroyed) res.end(']');
}

describe('bodies that drip', () => {
  // How long the client waited is counted in bytes the service dripped (one per 100 ms), not
  // wall time: CI's machine was once paused 12 s for a snapshot in the middle of this file.
  it('TTS audio that drips is cut after one request_timeout of waiting with too little audio', async () => {
    let dripped = { sent: () => 0 };
    const svc = await startHostileService({
      '/tts': (_q, res) => {
        res.writeHead(200, { 'content-type': 'audio/wav' });
        res.write(wavHeader(1_000_000));
        dripped = drip(res, () => Buffer.alloc(1), 100);
      },
    });
    const { client } = clientFor(svc, { request_timeout: 1_000 });
    const res = await client.synthesize({ text: 'hello' });
    const err = await drain(res.body).catch((e: unknown) => e);
    expect(dripped.sent()).toBeGreaterThanOrEqual(5);
    expect(dripped.sent()).toBeLessThan(25); // 10 in one request_timeout; the service drips forever
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/too slow: .* less than the 16384 bytes the agent needs per service.request_timeout/);
  });

  it('TTS audio that keeps pace plays on for longer than request_timeout: the bound is pace, not one deadline', async () => {
    const chunk = Buffer.alloc(PACE_MIN_BYTES + 1);
    let sent = 0;
    const svc = await startHostileService({
      '/tts': (_q, res) => {
        res.writeHead(200, { 'content-type': 'audio/wav' });
        res.write(wavHeader(chunk.length * 6));
        drip(res, () => (sent++ < 6 ? chunk : Buffer.alloc(0)), 400);
      },
    });
    const { client } = clientFor(svc, { request_timeout: 1_000 });
    const t0 = Date.now();
    const res = await client.synthesize({ text: 'a long phrase' });
    expect(await drain(res.body)).toBe(44 + chunk.length * 6);
    expect(Date.now() - t0).toBeGreaterThan(2_000);
  });

  it('a JSON answer whose body drips fails within request_timeout (the deadline covers the body)', async () => {
    const body = Buffer.from(JSON.stringify([{ face_id: ID(1), name: 'a'.repeat(200), group_id: 'g', id: 1 }]));
    let dripped = { sent: () => 0 };
    const svc = await startHostileService({
      '/v1/api/faces': (_q, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        dripped = drip(res, body, 100);
      },
    });
    const { client } = clientFor(svc, { request_timeout: 1_000 });
    await expect(client.listFaces()).rejects.toBeInstanceOf(TimeoutError);
    // About 10 of its 280 bytes came before the deadline; a client waiting for the body's end would take 28 s.
    expect(dripped.sent()).toBeGreaterThanOrEqual(5);
    expect(dripped.sent()).toBeLessThan(20);
  });
});

describe('listings far too large', () => {
  it('200,000 faces (about 20 MB) are listed', { timeout: 60_000 }, async () => {
    const svc = await startHostileService({ '/v1/api/faces': (_q, res) => writeListing(res, 200_000) });
    const { client } = clientFor(svc, { request_timeout: 30_000 });
    const faces = await client.listFaces();
    expect(faces).toHaveLength(200_000);
    expect(faces.skipped).toEqual([]);
    expect(faces[199_999]).toMatchObject({ face_id: ID(200_000), id: 200_000 });
  });

  it('an answer far over 32 MiB is refused once 32 MiB are read, with a clear error; reading stops there', { timeout: 60_000 }, async () => {
    // What the kernel may hold for a loopback connection once its reader stops: the send and
    // receive buffers at their largest (tcp_wmem's and tcp_rmem's maxima: 4 and 32 MiB on some
    // machines here, where a bound of 8 MiB past the limit failed on Node 24 with its reader
    // stopped at the limit). The answer is larger than the limit and all of that together.
    const kernelMax = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);
    const held = kernelMax('tcp_wmem') + kernelMax('tcp_rmem') + 1024 * 1024;
    // Records of 70 to 90 bytes: at least 1.5 times the limit and that.
    const records = Math.ceil((1.5 * (MAX_BUFFERED_BYTES + held)) / 70);
    const svc = await startHostileService({ '/v1/api/faces': (_q, res) => writeListing(res, records, 0).then(() => undefined) });
    const { client } = clientFor(svc, { request_timeout: 30_000 });
    const err = await client.listFaces().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toBe(`GET /faces: unexpected answer from the service: the answer is larger than ${MAX_BUFFERED_BYTES} bytes, the most the agent reads; it stopped reading there`);
    expect(svc.bytesSent).toBeLessThan(MAX_BUFFERED_BYTES + held);
  });
});

describe('redirects', () => {
  it('a redirect to another host is refused and names it; the credential never reaches that host', async () => {
    const other = await startHostileService({ '/v1/api/faces': (_q, res) => json(res, []) }, '127.0.0.2');
    const svc = await startHostileService({
      '/v1/api/faces': (_q, res) => res.writeHead(302, { location: `${other.url}/v1/api/faces` }).end(),
      [`/v1/api/faces/${ID(1)}/image`]: (_q, res) => res.writeHead(307, { location: `${other.url}/img` }).end(),
    });
    const { client } = clientFor(svc, { retries: 2 });

    const list = await client.listFaces().catch((e: unknown) => e);
    expect(list).toBeInstanceOf(BadResponseError);
    expect((list as Error).message).toBe(`GET /faces: the service redirected to another host, ${new URL(other.url).host} (HTTP 302); the agent follows no redirect, so its credential never goes elsewhere: if the service has moved, set service.face_base_url to the new address`);
    const image = await client.getFaceImage(ID(1)).catch((e: unknown) => e);
    expect(image).toBeInstanceOf(BadResponseError);
    expect((image as Error).message).toMatch(/redirected to another host, 127.0.0.2:\d+ \(HTTP 307\)/);

    expect(other.requests).toEqual([]);
    expect(svc.requests.every((r) => r.authorization === `Bearer ${TEST_TERMINAL_SECRET}`)).toBe(true);
    expect(svc.requests).toHaveLength(2); // a redirect is not retried
  });
});

describe('bytes that are not UTF-8', () => {
  it('an answer that is not UTF-8 at all is a bad response, not a crash', async () => {
    const svc = await startHostileService({ '/v1/api/faces': (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.from([0xff, 0xfe, 0x00, 0x5b])) });
    const { client } = clientFor(svc);
    const err = await client.listFaces().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toMatch(/bytes that are not UTF-8 and no JSON array/);
  });
});

describe('other answers the agent parses, record by record', () => {
  it('the voice catalogue leaves out malformed voices, lists the others, and says how many it skipped', async () => {
    const svc = await startHostileService({
      '/tts': (_q, res) => json(res, {
        code: 0,
        data: {
          speakers: [{ name: 'Ada', voice: 'v-ada' }, null, { name: 7, voice: 'v-x' }, { name: 'NoVoice' }, 'text', { name: 'Bo', voice: 'v-bo', extra: [1] }],
          speakers_count: 6, total_speakers_count: 6,
        },
      }),
    });
    const { client } = clientFor(svc);
    const page = await client.listVoices({ all: true });
    expect(page.speakers.map((v) => v.voice)).toEqual(['v-ada', 'v-bo']);
    expect(page.skipped).toBe(4);
    expect(page.total_speakers_count).toBe(6);
  });

  it('a speaker status of the wrong type is a clear bad response, not a crash', async () => {
    const svc = await startHostileService({ '/train_speaker': (_q, res) => json(res, { code: 0, status: 'done?', speaker_id: 5 }) });
    const { client } = clientFor(svc);
    const err = await client.speakerStatus('tts-turbo', 'spk-1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toMatch(/no numeric status in the answer/);
  });
});
