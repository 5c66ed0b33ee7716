import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestEmulator } from '../helpers/emulator.js';
import { jpeg, listFiles, listResults, put, readJson, startRig, waitFor, wav } from './fixtures.js';

const facePosts = (rig: { emulator: { requests: { method: string; path: string; status: number }[] } }) =>
  rig.emulator.requests.filter((r) => r.method === 'POST' && r.path === '/v1/api/faces');

describe('enrollment under bad conditions', () => {
  it('a file written slowly in chunks is uploaded once, complete', async () => {
    const rig = await startRig({ config: { enroll: { settle_time: 400 } } });
    const image = Buffer.concat([jpeg(), Buffer.alloc(64 * 1024, 7)]);
    const fh = await open(join(rig.dir, 'faces/slow.jpg'), 'w');
    const chunk = 4096;
    for (let i = 0; i < image.length; i += chunk) {
      await fh.write(image.subarray(i, i + chunk));
      await new Promise((r) => setTimeout(r, 60));
    }
    await fh.close();
    await waitFor('slow done', () => existsSync(join(rig.dir, 'done/faces/slow.json')));
    expect(facePosts(rig)).toHaveLength(1);
    const [face] = rig.emulator.state.faces();
    expect(rig.emulator.state.faceImage(face!.face_id)?.equals(image)).toBe(true);
  });

  it('service down, then up: files wait in the outbox and all go once it answers', async () => {
    const rig = await startRig();
    const { port, terminals, apiKey } = rig.emulator;
    await rig.emulator.close();
    for (let i = 0; i < 5; i++) await put(rig.dir, `faces/p${i}.jpg`, jpeg());
    await waitFor('paused after failures', () => rig.enrollment.status().last_service_error !== null);
    const st = rig.enrollment.status();
    expect(st.kinds.faces.queued + st.kinds.faces.in_flight).toBe(5);
    expect(st.kinds.faces.oldest_waiting_ms).toBeGreaterThan(0);
    expect(listFiles(join(rig.dir, 'faces'))).toHaveLength(5);
    const back = await startTestEmulator({ port, terminals, apiKey });
    await waitFor('all done', () => rig.enrollment.status().kinds.faces.done === 5, 20_000);
    expect(back.state.faces().map((f) => f.name).sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    await waitFor('results', () => listResults(join(rig.dir, 'done/faces')).length === 10);
  });

  it('503 bursts and 429 with Retry-After: retried with backoff, each face created once', async () => {
    const rig = await startRig();
    rig.emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'status', status: 503, times: 6 });
    rig.emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'status', status: 429, retryAfter: 1, times: 1 });
    for (let i = 0; i < 6; i++) await put(rig.dir, `faces/q${i}.jpg`, jpeg());
    await waitFor('all done', () => rig.enrollment.status().kinds.faces.done === 6, 20_000);
    const names = rig.emulator.state.faces().map((f) => f.name).sort();
    expect(names).toEqual(['q0', 'q1', 'q2', 'q3', 'q4', 'q5']);
    expect(facePosts(rig).filter((r) => r.status === 503)).toHaveLength(6);
    expect(facePosts(rig).filter((r) => r.status === 429)).toHaveLength(1);
    expect(facePosts(rig).filter((r) => r.status === 200)).toHaveLength(6);
  });

  it('dropped connections: before the service acted it is sent again; after, the listing settles it and nothing is sent twice', async () => {
    const rig = await startRig({ config: { service: { request_timeout: 500 } } });
    rig.emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'drop', times: 2 });
    rig.emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'drop-after', times: 2 });
    for (let i = 0; i < 4; i++) await put(rig.dir, `faces/r${i}.jpg`, jpeg());
    await waitFor('all done', () => rig.enrollment.status().kinds.faces.done === 4, 20_000);
    const faces = rig.emulator.state.faces();
    expect(faces.map((f) => f.name).sort()).toEqual(['r0', 'r1', 'r2', 'r3']);
    await waitFor('results', () => listResults(join(rig.dir, 'done/faces')).length === 8);
    const results = [0, 1, 2, 3].map((i) => readJson(join(rig.dir, `done/faces/r${i}.json`)));
    expect(results.filter((r) => r.reconciled === true)).toHaveLength(2);
    for (const r of results) expect(faces.map((f) => f.face_id)).toContain(r.face_id);
  });

  it('a voiceprint whose answer was lost cannot be checked: failed/ with TA_ERR_OUTCOME_UNKNOWN, not sent twice', async () => {
    const rig = await startRig();
    rig.emulator.faults.add({ method: 'POST', path: '/voiceprint', action: 'drop-after', times: 1 });
    await put(rig.dir, 'voiceprints/lost.wav', wav(1));
    await waitFor('error file', () => existsSync(join(rig.dir, 'failed/voiceprints/lost.error.json')));
    expect(readJson(join(rig.dir, 'failed/voiceprints/lost.error.json'))).toMatchObject({ code: 'TA_ERR_OUTCOME_UNKNOWN', attempts: 1 });
    expect(rig.emulator.requests.filter((r) => r.method === 'POST' && r.path === '/voiceprint')).toHaveLength(1);
  });

  it('an upload cut off by stop() is settled by a listing after the restart before it is sent again', async () => {
    const rig = await startRig({ config: { service: { request_timeout: 1000 } } });
    // No answer within request_timeout: stop() cuts the request off (the emulator then drops it unprocessed).
    rig.emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'delay', delayMs: 5000, times: 1 });
    await put(rig.dir, 'faces/cut.jpg', jpeg());
    await waitFor('in flight', () => rig.enrollment.status().kinds.faces.in_flight === 1);
    await rig.restart();
    await waitFor('done', () => existsSync(join(rig.dir, 'done/faces/cut.json')), 10_000);
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['cut']);
    // Listings are reads and may repeat when a timer fires while the machine is busy: collapse runs.
    const seq = rig.emulator.requests.map((r) => `${r.method} ${r.status}`).filter((x, i, all) => !(x === 'GET 200' && all[i - 1] === x));
    // list (decide), POST (cut), list (settle: no face yet), POST (again), list (learn the face_id)
    expect(seq).toEqual(['GET 200', expect.stringMatching(/^POST (0|400)$/), 'GET 200', 'POST 200', 'GET 200']);
  });

  it('an answer lost just before a restart: the listing finds the face, it is not sent again', async () => {
    const rig = await startRig({ config: { service: { request_timeout: 1000 } } });
    rig.emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'drop-after', times: 1 });
    await put(rig.dir, 'faces/lost.jpg', jpeg());
    await waitFor('answer lost', () => rig.enrollment.status().last_service_error !== null);
    await rig.restart();
    await waitFor('done', () => existsSync(join(rig.dir, 'done/faces/lost.json')), 10_000);
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['lost']);
    expect(facePosts(rig)).toHaveLength(1);
    expect(readJson(join(rig.dir, 'done/faces/lost.json'))).toMatchObject({ reconciled: true, face_id: rig.emulator.state.faces()[0]!.face_id });
  });

  it('credentials refused (401): files wait in the outbox instead of failing, and status says why', async () => {
    const rig = await startRig({ config: { service: { terminal_secret: 'a-wrong-terminal-secret' } } });
    await put(rig.dir, 'faces/mallory.jpg', jpeg());
    await waitFor('auth error', () => rig.enrollment.status().last_service_error?.includes('credentials refused'));
    const st = rig.enrollment.status();
    expect(st.kinds.faces).toMatchObject({ failed: 0, done: 0 });
    expect(st.kinds.faces.queued + st.kinds.faces.in_flight).toBe(1);
    expect(st.paused_until).not.toBeNull();
    expect(JSON.stringify(st)).not.toContain('a-wrong-terminal-secret');
    expect(listFiles(join(rig.dir, 'faces'))).toEqual(['mallory.jpg']);
    expect(listFiles(join(rig.dir, 'failed/faces'))).toEqual([]);
  });
});
