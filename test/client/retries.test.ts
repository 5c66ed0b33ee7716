import { describe, expect, it, beforeAll, beforeEach } from 'vitest';
import { createServer } from 'node:net';
import { startRig, writeFixture, PNG_BYTES, type Rig } from './fixtures.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { AbortedError, NetworkError, ServerError, TimeoutError } from '../../src/errors.js';

// Retries only where a repeat cannot do harm, with backoff and Retry-After; timeouts and dropped
// connections, all provoked with the emulator's deterministic faults.

let rig: Rig;
let png: string;
beforeAll(async () => {
  rig = await startRig();
  const tmp = tmpDirManual('ta-client-retry-');
  png = writeFixture(tmp.dir, 'face.png', PNG_BYTES);
  return () => tmp.remove();
});
beforeEach(() => {
  rig.emu.faults.clear();
  rig.emu.clearRequests();
  rig.events.length = 0;
});

const hits = (method: string, path: string) => rig.emu.requests.filter((r) => r.method === method && r.path === path);

describe('retries', () => {
  it('a GET answered 503 twice is retried and succeeds', async () => {
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, times: 2 });
    await expect(rig.client.listFaces()).resolves.toBeInstanceOf(Array);
    expect(hits('GET', '/v1/api/faces').map((r) => r.status)).toEqual([503, 503, 200]);
    expect(rig.events.map((e) => e.outcome)).toEqual(['retry', 'retry', 'ok']);
  });

  it('gives up after service.retries with a ServerError carrying the status and exit 69', async () => {
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 500, times: Infinity });
    const err = await rig.client.listFaces().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect(err).toMatchObject({ status: 500, exitCode: 69, operation: 'GET /faces' });
    expect(hits('GET', '/v1/api/faces')).toHaveLength(3); // retries: 2
  });

  it('honours Retry-After (seconds) before repeating', async () => {
    rig.emu.faults.add({ method: 'GET', path: '/tts', action: 'status', status: 429, retryAfter: 1, times: 1 });
    await rig.client.listVoices();
    const [first, second] = hits('GET', '/tts');
    expect(first!.status).toBe(429);
    expect(second!.status).toBe(200);
    // The backoff alone would wait at most 80 ms here.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it('a Retry-After beyond the cap fails at once and tells the caller how long to wait', async () => {
    const client = rig.clientWith({}, { maxRetryAfterMs: 2_000 });
    rig.emu.faults.add({ method: 'GET', path: '/tts', action: 'status', status: 503, retryAfter: 120, times: 1 });
    const err = await client.listVoices().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).retryAfterMs).toBe(120_000);
    expect(hits('GET', '/tts')).toHaveLength(1);
  });

  it('a POST that reached the server is not repeated (5xx, or connection dropped after it ran)', async () => {
    rig.emu.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'status', status: 503, times: 1 });
    await expect(rig.client.createFace({ name: 'Once', image: { path: png, contentType: 'image/png' } })).rejects.toBeInstanceOf(ServerError);
    expect(hits('POST', '/v1/api/faces')).toHaveLength(1);

    rig.emu.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'drop-after', times: 1 });
    const err = await rig.client.createFace({ name: 'Twice?', image: { path: png, contentType: 'image/png' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).notSent).toBe(false);
    expect(hits('POST', '/v1/api/faces')).toHaveLength(2);
    // The face exists exactly once: the listing is how a caller settles a lost answer.
    expect(rig.emu.state.faces().filter((f) => f.name === 'Twice?')).toHaveLength(1);
  });

  it('a dropped connection on a GET is retried', async () => {
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'drop', times: 1 });
    await expect(rig.client.listFaces()).resolves.toBeInstanceOf(Array);
    expect(rig.events.map((e) => [e.outcome, e.errorCode])).toEqual([['retry', 'TA_ERR_NETWORK'], ['ok', undefined]]);
  });

  it('a PUT is retried after a 5xx (idempotent)', async () => {
    await rig.client.createFace({ name: 'Put', image: { path: png, contentType: 'image/png' } });
    const face = rig.emu.state.faces().find((f) => f.name === 'Put')!;
    rig.emu.faults.add({ method: 'PUT', path: `/v1/api/faces/${face.face_id}`, action: 'status', status: 502, times: 1 });
    await rig.client.updateFace(face.face_id, { name: 'Put2', image: { path: png, contentType: 'image/png' } });
    expect(hits('PUT', `/v1/api/faces/${face.face_id}`).map((r) => r.status)).toEqual([502, 200]);
    expect(rig.emu.state.face(face.face_id)!.name).toBe('Put2');
  });

  it('a POST to a port nobody listens on is retried (it never reached a server), then NetworkError notSent', async () => {
    const port = await freePort();
    const client = rig.clientWith({ base_url: `http://127.0.0.1:${port}` });
    const err = await client.notifyAgent('a1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ notSent: true, exitCode: 69 });
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
    expect(rig.events.filter((e) => e.operation === 'POST /agent/notify').map((e) => e.outcome)).toEqual(['retry', 'retry', 'error']);
  });
});

describe('deadlines and cancellation', () => {
  it('an answer slower than the deadline is a TimeoutError; a GET is retried and then succeeds', async () => {
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'delay', delayMs: 1_500, times: 1 });
    await expect(rig.client.listFaces({ timeoutMs: 300 })).resolves.toBeInstanceOf(Array);
    expect(rig.events.map((e) => [e.outcome, e.errorCode])).toEqual([['retry', 'TA_ERR_TIMEOUT'], ['ok', undefined]]);

    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'delay', delayMs: 1_500, times: 1 });
    const err = await rig.client.listFaces({ timeoutMs: 300, retries: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/within 300 ms/);
  });

  it('the deadline covers the whole body, not only the gap between chunks', async () => {
    // A slow body trickles bytes: undici's gap timeout never fires, the overall deadline does.
    rig.emu.faults.setChaos({ slowBodyBytesPerSec: 2_000 });
    try {
      const err = await rig.client.listVoices({ top: 100, all: true }, { timeoutMs: 400, retries: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
    } finally {
      rig.emu.faults.clear();
    }
  });

  it("the caller's signal cancels a call (AbortedError), also during a retry wait", async () => {
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'delay', delayMs: 2_000, times: 1 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await expect(rig.client.listFaces({ signal: ac.signal })).rejects.toBeInstanceOf(AbortedError);

    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, retryAfter: 5, times: 1 });
    const ac2 = new AbortController();
    setTimeout(() => ac2.abort(), 200);
    await expect(rig.client.listFaces({ signal: ac2.signal })).rejects.toBeInstanceOf(AbortedError);
  });

  it('one signal shared by many calls (as the outbox loop passes it) cancels every call still running, and only those', async () => {
    const ac = new AbortController();
    // Calls that finished before the abort: their cancel must not run later (nothing to see) ...
    for (let i = 0; i < 3; i++) await expect(rig.client.listFaces({ signal: ac.signal })).resolves.toBeInstanceOf(Array);
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'delay', delayMs: 5_000, times: 2 });
    const started = Date.now();
    const slow = [rig.client.listFaces({ signal: ac.signal }), rig.client.listFaces({ signal: ac.signal })];
    setTimeout(() => ac.abort(), 100);
    for (const call of slow) await expect(call).rejects.toBeInstanceOf(AbortedError);
    expect(Date.now() - started).toBeLessThan(2_000);
    // ... and a call with its own signal, running meanwhile, is not cut by another's abort.
    const own = new AbortController();
    rig.emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'delay', delayMs: 300, times: 1 });
    const other = new AbortController();
    const mine = rig.client.listFaces({ signal: own.signal });
    other.abort();
    await expect(mine).resolves.toBeInstanceOf(Array);
  });

  it('a body cut mid-stream surfaces as a typed error on the stream', async () => {
    rig.emu.faults.add({ method: 'POST', path: '/tts', action: 'drop-body', times: 1 });
    const res = await rig.client.synthesize({ text: 'this answer will be cut in half' });
    const err = await (async () => {
      for await (const _ of res.body) { /* drain */ }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
  });
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
