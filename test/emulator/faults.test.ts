import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestEmulator, terminalOf } from '../helpers/emulator.js';
import { parseFaultSpec } from '../../src/emulator/index.js';
import { jpegImage } from './fixtures.js';
import { call, form } from './http.js';

describe('emulator fault injection', () => {
  it('answers the next N matching requests with a status and Retry-After, then normally', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, retryAfter: 2, times: 2 });
    const url = `${emu.faceBaseUrl}/faces`;
    // Another path or method is not affected.
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(200);
    const a = await call(url, 'GET', { token });
    expect(a.status).toBe(503);
    expect(a.headers['retry-after']).toBe('2');
    expect(a.json()).toMatchObject({ return_code: 503, return_message: expect.stringMatching(/injected/) });
    expect((await call(url, 'GET', { token })).status).toBe(503);
    expect((await call(url, 'GET', { token })).status).toBe(200);
    expect(emu.faults.rules()).toEqual([]);
    expect(emu.requests.filter((r) => r.path === '/v1/api/faces').map((r) => [r.status, r.fault])).toEqual([
      [503, 'rule:503'], [503, 'rule:503'], [200, undefined],
    ]);
  });

  it('drops the connection before the endpoint runs, or after it ran (its effect kept)', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    emu.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'drop' });
    const post = () => call(`${emu.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Ada' }, { image: { data: jpegImage(), filename: 'a.jpg', type: 'image/jpeg' } }) });
    await expect(post()).rejects.toThrow(/other side closed|socket|ECONNRESET/i);
    expect(emu.state.faces()).toEqual([]);
    emu.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'drop-after' });
    await expect(post()).rejects.toThrow(/other side closed|socket|ECONNRESET/i);
    expect(emu.state.faces().map((f) => f.name)).toEqual(['Ada']);
    expect(emu.requests.map((r) => [r.status, r.fault])).toEqual([[0, 'rule:drop'], [0, 'rule:drop-after']]);
    expect((await post()).status).toBe(200);
  });

  it('cuts a body in the middle (connection closed) or truncates it cleanly', async () => {
    const emu = await startTestEmulator({ tts: 'tone' });
    const tts = () => request(`${emu.baseUrl}/tts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'a fairly long sentence to speak' }) });
    const whole = Buffer.from(await (await tts()).body.arrayBuffer());
    emu.faults.add({ path: '/tts', method: 'POST', action: 'truncate' });
    const cut = await tts();
    expect(cut.statusCode).toBe(200);
    const cutBody = Buffer.from(await cut.body.arrayBuffer());
    expect(cutBody.length).toBe(Math.floor(whole.length / 2));
    expect(cutBody.readUInt32LE(40)).toBeGreaterThan(cutBody.length - 44); // the header promises more than came
    emu.faults.add({ path: '/tts', action: 'drop-body' });
    const dropped = await tts();
    expect(dropped.statusCode).toBe(200);
    await expect(dropped.body.arrayBuffer()).rejects.toThrow();
  });

  it('answers JSON with a non-zero code instead of audio, and delays on demand', async () => {
    const emu = await startTestEmulator({ tts: 'tone' });
    emu.faults.add({ path: '/tts', action: 'json' });
    const r = await call(`${emu.baseUrl}/tts`, 'POST', { json: { text: 'hi' } });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/application\/json/);
    expect(r.json().code).not.toBe(0);
    emu.faults.add({ path: '/tts', action: 'delay', delayMs: 300 });
    const t0 = Date.now();
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(emu.requests.at(-1)?.fault).toBe('rule:delay');
    // Any action may come late: a refusal after 300 ms, as a slow service's.
    emu.faults.add({ path: '/tts', action: 'status', status: 400, delayMs: 300 });
    const t1 = Date.now();
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(400);
    expect(Date.now() - t1).toBeGreaterThanOrEqual(290);
    expect(() => emu.faults.add({ action: 'drop', delayMs: -1 })).toThrow(/delayMs must be a number >= 0/);
  });

  it('chaos: shares of 5xx, 429 and drops from a seeded generator, slow bodies', async () => {
    const emu = await startTestEmulator({ chaos: { errorRate: 0.3, throttleRate: 0.2, dropRate: 0.1, seed: 42 } });
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      try {
        statuses.push((await call(`${emu.baseUrl}/tts?top=1`, 'GET')).status);
      } catch {
        statuses.push(0);
      }
    }
    const count = (pred: (s: number) => boolean) => statuses.filter(pred).length;
    expect(count((s) => s >= 500)).toBeGreaterThan(5);
    expect(count((s) => s === 429)).toBeGreaterThan(3);
    expect(count((s) => s === 0)).toBeGreaterThan(0);
    expect(count((s) => s === 200)).toBeGreaterThan(10);
    expect(emu.requests.filter((r) => r.status === 429).every((r) => r.fault === 'chaos:429')).toBe(true);
    emu.faults.setChaos({ slowBodyBytesPerSec: 2000 });
    const t0 = Date.now();
    const slow = await call(`${emu.baseUrl}/tts?all=true&top=5`, 'GET');
    expect(slow.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual((slow.body.length / 2000) * 1000 * 0.8);
    emu.faults.clear();
    expect(emu.faults.chaos()).toEqual({});
  });

  it('is controllable over HTTP under /__emulator, which is neither logged nor faulted', async () => {
    const emu = await startTestEmulator();
    const ctl = `${emu.baseUrl}/__emulator`;
    const added = await call(`${ctl}/faults`, 'POST', { json: { method: 'GET', path: '/tts', action: 'status', status: 429, retryAfter: 1, times: 'inf' } });
    expect(added.status).toBe(200);
    const id = added.json().ids[0] as string;
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(429);
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(429);
    expect((await call(`${ctl}/faults`, 'GET')).json().rules[0]).toMatchObject({ id, hits: 2 });
    expect((await call(`${ctl}/faults/${id}`, 'DELETE')).status).toBe(200);
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(200);
    expect((await call(`${ctl}/faults`, 'POST', { json: { action: 'explode' } })).status).toBe(400);
    expect((await call(`${ctl}/chaos`, 'PUT', { json: { errorRate: 1 } })).json()).toEqual({ errorRate: 1 });
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBeGreaterThanOrEqual(500);
    expect((await call(`${ctl}/chaos`, 'PUT', { json: { errorRate: 2 } })).status).toBe(400);
    await call(`${ctl}/faults`, 'DELETE');
    expect((await call(`${emu.baseUrl}/tts`, 'GET')).status).toBe(200);
    const log = (await call(`${ctl}/requests`, 'GET')).json() as { path: string }[];
    expect(log.every((r) => r.path === '/tts')).toBe(true);
    expect(log).toHaveLength(emu.requests.length);
  });

  it('parses --fault specs', () => {
    expect(parseFaultSpec('GET /v1/api/faces 503 x2 retry-after=1')).toEqual({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, times: 2, retryAfter: 1 });
    expect(parseFaultSpec('/tts truncate')).toEqual({ path: '/tts', action: 'truncate' });
    expect(parseFaultSpec('* /v1/api/* delay=50 xinf')).toEqual({ method: '*', path: '/v1/api/*', action: 'delay', delayMs: 50, times: Infinity });
    // With an action, in either order: that action after the delay (before, the delay replaced it).
    expect(parseFaultSpec('POST /v1/api/faces delay=700 400')).toEqual({ method: 'POST', path: '/v1/api/faces', action: 'status', status: 400, delayMs: 700 });
    expect(parseFaultSpec('POST /v1/api/faces 400 delay=700')).toEqual({ method: 'POST', path: '/v1/api/faces', action: 'status', status: 400, delayMs: 700 });
    expect(() => parseFaultSpec('GET /x')).toThrow(/no action/);
    expect(() => parseFaultSpec('GET /x boom')).toThrow(/cannot read 'boom'/);
    expect(() => parseFaultSpec('GET 503')).toThrow(/expected/);
  });
});

describe('emulator request log', () => {
  it('records method, path, query, status, bytes in, auth kind (never the value) and time', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    const before = Date.now();
    await call(`${emu.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Ada' }, { image: { data: jpegImage(), filename: 'a.jpg', type: 'image/jpeg' } }) });
    await call(`${emu.baseUrl}/tts?language=english&top=2`, 'GET', { headers: { 'user-agent': 'terminal-agent/test' } });
    await call(`${emu.baseUrl}/knowledge/x`, 'DELETE', { token: 'bogus-token' });
    const [post, list, del] = emu.requests;
    expect(post).toMatchObject({ method: 'POST', path: '/v1/api/faces', status: 200, auth: 'terminal_secret', contentType: expect.stringMatching(/^multipart\/form-data/) });
    expect(post!.bytes).toBeGreaterThan(jpegImage().length);
    expect(post!.at).toBeGreaterThanOrEqual(before);
    expect(list).toMatchObject({ method: 'GET', path: '/tts', query: { language: 'english', top: '2' }, status: 200, bytes: 0, auth: 'none', userAgent: 'terminal-agent/test' });
    expect(del).toMatchObject({ status: 401, auth: 'unknown' });
    expect(JSON.stringify(emu.requests)).not.toContain(token);
    emu.clearRequests();
    expect(emu.requests).toEqual([]);
  });
});
