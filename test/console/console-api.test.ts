import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashPassword } from '../../src/util/password-hash.js';
import { faceImagePng, SAMPLE_FACES } from '../../src/daemon/sample-images.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';
import { consoleClient, type ConsoleClient } from './console-client.js';
import { trickle } from '../helpers/trickle-client.js';

// The console's API against a real daemon (`node dist/main.js run`, built) and the emulator, over
// loopback HTTP. One daemon for the file: the steps run in order, as an operator would click.

const PASSWORD = 'a long console password';

let emulator: Emulator;
let files: DaemonFiles;
let daemon: DaemonProcess;
let tmp: { dir: string; remove(): void };
let base: string;
let c: ConsoleClient;

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  tmp = tmpDirManual('ta-console-api-');
  emulator = await startTestEmulator();
  emulator.seedFaces(emulator.terminals[0]!.group_id, SAMPLE_FACES.map((f) => ({ name: f.name, image: faceImagePng(f.color, 320) })));
  const hash = await hashPassword(PASSWORD, { ln: 10, r: 8, p: 1 });
  files = daemonFiles(join(tmp.dir, 'agent'), emulator, { syncInterval: '1h', extra: ['console:', '  listen: 127.0.0.1:0', `  password_hash: "${hash}"`].join('\n') });
  daemon = spawnDaemon(files.configPath);
  await daemon.waitLog(isReady, 20_000, 'ready');
  base = String((await daemon.waitLog((l) => l.msg === 'web console listening', 10_000, 'console listening')).url);
  c = consoleClient(base);
}, 40_000);

afterAll(async () => {
  daemon?.signal('SIGTERM');
  await Promise.race([daemon?.exited, sleep(10_000)]);
  daemon?.signal('SIGKILL');
  await emulator?.close();
  tmp?.remove();
});

describe('web console API', () => {
  it('serves the page with security headers and refuses the API without a login', async () => {
    const page = await c.call('GET', '/');
    expect([200, 503]).toContain(page.status); // 503 only when the pages were not built
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const s = await c.call('GET', '/api/session');
    expect(s.json()).toEqual({ authenticated: false, login_required: true });
    const status = await c.call('GET', '/api/status');
    expect(status.status).toBe(401);
    expect(status.json().error.code).toBe('TA_ERR_LOGIN_REQUIRED');
    expect((await c.call('GET', '/api/faces/x/thumb')).status).toBe(401);
  });

  it('refuses a wrong password and a login from another site, accepts the right one with a strict cookie', async () => {
    const wrong = await c.login('not it');
    expect(wrong.status).toBe(401);
    expect(wrong.json().error.code).toBe('TA_ERR_LOGIN');
    expect(c.cookie).toBeUndefined();
    const foreign = await c.call('POST', '/api/login', { body: { password: PASSWORD }, headers: { origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    const ok = await c.login(PASSWORD);
    expect(ok.status).toBe(200);
    const cookie = String(ok.headers['set-cookie']);
    expect(cookie).toMatch(/^ta_session=[\w-]{40,};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toMatch(/Secure/); // plain http on loopback; Secure under TLS
    expect(ok.json().csrf_token).toMatch(/^[\w-]{40,}$/);
    expect((await c.call('GET', '/api/session')).json()).toMatchObject({ authenticated: true, login_required: true });
  });

  it('answers status with the actions and the faces from the cache with search', async () => {
    const s = (await c.call('GET', '/api/status')).json();
    expect(s.state).toBe('running');
    expect(Array.isArray(s.actions)).toBe(true);
    expect(s.console).toMatchObject({ url: base, tls: false, login_required: true });
    const faces = await until('the first sync', async () => {
      const f = (await c.call('GET', '/api/faces')).json();
      // The rows are committed a moment before the sync is recorded as finished: wait for both.
      return f.total === SAMPLE_FACES.length && f.synced_at ? f : undefined;
    });
    expect(faces.synced_at).toMatch(/^\d{4}-/);
    expect(faces.faces[0]).toMatchObject({ thumb_url: expect.stringMatching(/^\/api\/faces\/\w+\/thumb\?v=/), image_url: expect.stringMatching(/\/image\?v=/) });
    const one = SAMPLE_FACES[1]!.name;
    const found = (await c.call('GET', `/api/faces?q=${encodeURIComponent(one.slice(0, 4).toLowerCase())}`)).json();
    expect(found.faces.map((f: { name: string }) => f.name)).toContain(one);
    expect(found.matched).toBeLessThan(faces.total);
  });

  it('makes each thumbnail once, on disk, and serves it again without decoding', async () => {
    const faces = (await c.call('GET', '/api/faces')).json().faces as { face_id: string; thumb_url: string; image_url: string }[];
    const before = (await c.call('GET', '/api/status')).json().console.thumbnails;
    const t1 = await c.call('GET', faces[0]!.thumb_url);
    expect(t1.status).toBe(200);
    expect(t1.headers['content-type']).toBe('image/webp');
    const full = await c.call('GET', faces[0]!.image_url);
    expect(full.headers['content-type']).toBe('image/png');
    expect(t1.body.length).toBeLessThan(full.body.length);
    const thumbs = join(files.stateDir, 'console', 'thumbs');
    const [file] = readdirSync(thumbs).filter((n) => n.startsWith(faces[0]!.face_id));
    const mtime = statSync(join(thumbs, file!)).mtimeMs;
    const t2 = await c.call('GET', faces[0]!.thumb_url);
    expect(t2.body.equals(t1.body)).toBe(true);
    const after = (await c.call('GET', '/api/status')).json().console.thumbnails;
    expect(after.made - before.made).toBe(1);
    expect(after.cache_hits - before.cache_hits).toBe(1);
    expect(statSync(join(thumbs, file!)).mtimeMs).toBe(mtime);
    const again = await c.call('GET', faces[0]!.thumb_url, { headers: { 'if-none-match': String(t1.headers.etag) } });
    expect(again.status).toBe(304);
  });

  it('answers 404, saying why, for the thumbnail or image of a face the cache does not hold', async () => {
    const gone = 'f'.repeat(32);
    for (const kind of ['thumb', 'image']) {
      const r = await c.call('GET', `/api/faces/${gone}/${kind}?v=0`);
      expect(r.status).toBe(404);
      expect(JSON.stringify(r.json())).toContain(`no face ${gone} in the local cache`);
    }
  });

  it('refuses changes without the CSRF token or from another origin', async () => {
    const noToken = await c.call('POST', '/api/enroll/upload?kind=faces&name=Csrf.png', { body: faceImagePng([1, 2, 3]), noCsrf: true });
    expect(noToken.status).toBe(403);
    expect(noToken.json().error.code).toBe('TA_ERR_CSRF');
    const foreign = await c.call('POST', '/api/enroll/upload?kind=faces&name=Csrf.png', { body: faceImagePng([1, 2, 3]), headers: { origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(existsSync(join(files.enrollDir, 'faces', 'Csrf.png'))).toBe(false);
  });

  it('uploads a face that ends in done/ exactly once', async () => {
    const thumbBefore = (await c.call('GET', '/api/faces')).json().faces.find((x: { name: string }) => x.name === 'Grace Hopper')?.thumb_url;
    expect(thumbBefore).toMatch(/\/thumb\?v=/);
    const up = await c.call('POST', '/api/enroll/upload?kind=faces&name=Grace%20Hopper.png', { body: faceImagePng([90, 120, 200], 96), headers: { origin: base.replace(/\/$/, '') } });
    expect(up.status).toBe(201);
    expect(up.json()).toMatchObject({ kind: 'faces', name: 'Grace Hopper.png' });
    const again = await c.call('POST', '/api/enroll/upload?kind=faces&name=Grace%20Hopper.png', { body: faceImagePng([90, 120, 200], 96) });
    expect([201, 409]).toContain(again.status); // 409 while the first waits; 201 if it already left the inbox
    const done = await until('the upload in done', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      const items = l.done.filter((i: { name: string }) => i.name.startsWith('Grace Hopper'));
      return items.length === (again.status === 201 ? 2 : 1) && l.in_flight.length === 0 && l.queued.length === 0 ? items : undefined;
    });
    expect(done[0]).toMatchObject({ kind: 'faces', state: 'done', media: 'image', result: expect.objectContaining({ face_id: expect.any(String) }) });
    // The console kept its face list from before the upload (face-list.ts, for KEEP_MS); the new
    // picture the upload put in the cache (Grace Hopper was one of the group's, updated) is in the
    // gallery within moments, not once the kept list expires.
    const gallery = await until('the uploaded picture in the gallery', async () => {
      const f = (await c.call('GET', '/api/faces')).json();
      const grace = f.faces.find((x: { name: string }) => x.name === 'Grace Hopper');
      return grace && grace.thumb_url !== thumbBefore ? f : undefined;
    }, 5_000);
    expect(gallery.total).toBe(SAMPLE_FACES.length);
    const group = emulator.terminals[0]!.group_id;
    // The same picture twice is one face at the service (the second is recorded as a duplicate).
    expect(emulator.state.faces(group).filter((f) => f.name === 'Grace Hopper')).toHaveLength(1);
    expect(readdirSync(join(files.enrollDir, 'faces'))).toEqual([]);
    const preview = await c.call('GET', `/api/enroll/file?kind=faces&state=done&name=${encodeURIComponent(done[0].name)}`);
    expect(preview.status).toBe(200);
    expect(preview.headers['content-type']).toBe('image/png');
    // A page that listed it while it was waiting asks with the state it saw: it gets the file from done/.
    const stale = await c.call('GET', `/api/enroll/file?kind=faces&state=queued&name=${encodeURIComponent(done[0].name)}`);
    expect(stale.status).toBe(200);
    expect(stale.headers['content-type']).toBe('image/png');
    expect((await c.call('GET', '/api/enroll/file?kind=faces&state=queued&name=Nobody.png')).status).toBe(404);
  });

  it('leaves nothing behind when an upload is cut off mid-body', async () => {
    const url = new URL('/api/enroll/upload?kind=faces&name=Cut.png', base);
    await new Promise<void>((resolve) => {
      const req = request(url, { method: 'POST', headers: { cookie: c.cookie!, 'x-csrf-token': c.csrf!, 'content-length': '200000' } });
      req.on('error', () => resolve());
      req.write(faceImagePng([5, 5, 5], 64));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 300);
    });
    await sleep(1500); // longer than enroll.settle_time: a partial file would have been taken by now
    expect(readdirSync(join(files.enrollDir, 'faces'))).toEqual([]);
    const l = (await c.call('GET', '/api/enroll')).json();
    expect([...l.queued, ...l.in_flight, ...l.failed, ...l.done].filter((i: { name: string }) => i.name.startsWith('Cut'))).toEqual([]);
  });

  it('does not follow a symlink put in an enrollment folder', async () => {
    const link = join(files.enrollDir, 'done', 'faces', 'Sneaky.png');
    symlinkSync(files.secretPath, link);
    try {
      const r = await c.call('GET', '/api/enroll/file?kind=faces&state=done&name=Sneaky.png');
      expect(r.status).toBe(404);
    } finally {
      unlinkSync(link);
    }
  });

  it('refuses bad names and files over enroll.max_file_size', async () => {
    const bad = await c.call('POST', '/api/enroll/upload?kind=faces&name=..%2Fescape.png', { body: faceImagePng([1, 1, 1]) });
    expect(bad.status).toBe(400);
    const wrongExt = await c.call('POST', '/api/enroll/upload?kind=voiceprints&name=a.mp3', { body: 'x' });
    expect(wrongExt.status).toBe(400);
    expect(wrongExt.json().error.message).toMatch(/\.wav/);
  });

  it('shows a failed file with its reason, and retries it once fixed', async () => {
    const up = await c.call('POST', '/api/enroll/upload?kind=faces&name=Broken.png', { body: Buffer.from('this is not an image at all') });
    expect(up.status).toBe(201);
    const failed = await until('the failure', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      return l.failed.find((i: { name: string; error?: unknown }) => i.name === 'Broken.png' && i.error);
    });
    expect(failed.error.message.length).toBeGreaterThan(5);
    expect(failed.error.code).toMatch(/^TA_ERR_/);
    // The operator fixes the file where it lies, then presses Retry.
    writeFileSync(join(files.enrollDir, 'failed', 'faces', 'Broken.png'), faceImagePng([200, 50, 50], 80));
    const r = await c.call('POST', '/api/enroll/retry', { body: { kind: 'faces', name: 'Broken.png' } });
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ kind: 'faces', name: 'Broken.png' });
    const done = await until('the retried file in done', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      // The original moves into done/ a moment before its result file is in place (listing.ts).
      return l.done.find((i: { name: string; result?: unknown }) => i.name === 'Broken.png' && i.result);
    });
    expect(done.result.face_id).toEqual(expect.any(String));
    expect(existsSync(join(files.enrollDir, 'failed', 'faces', 'Broken.png'))).toBe(false);
    expect(readdirSync(join(files.enrollDir, 'failed', 'faces')).filter((n) => n.startsWith('Broken'))).toEqual([]);
    const gone = await c.call('POST', '/api/enroll/retry', { body: { kind: 'faces', name: 'Broken.png' } });
    expect(gone.status).toBe(404);
  });

  it('shows the result of a file whose name leaves no room for its result file name, and refuses its retry with the reason', async () => {
    // 255 bytes (83 characters: the service limits names in characters): `STEM.json` and
    // `STEM.error.json` would not fit NAME_MAX, so the result files get a cut, hashed name.
    const long = (tail: string) => `${'\u6f22'.repeat(83)}${tail}.png`;
    const good = long('gg');
    const broken = long('bb');
    expect(Buffer.byteLength(good)).toBe(255);
    const inbox = join(files.enrollDir, 'faces');
    // Dropped as an operator would (scp, then a rename), not through the console.
    for (const [name, body] of [[good, faceImagePng([30, 30, 200], 80)], [broken, Buffer.from('this is not an image at all')]] as const) {
      writeFileSync(join(inbox, '.partial'), body);
      renameSync(join(inbox, '.partial'), join(inbox, name));
    }
    const done = await until('the long name with its result', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      return l.done.find((i: { name: string; result?: unknown }) => i.name === good && i.result);
    });
    expect(done.result).toMatchObject({ action: 'created', file: good, face_id: expect.any(String) });
    const failed = await until('the long broken name with its reason', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      return l.failed.find((i: { name: string; error?: unknown }) => i.name === broken && i.error);
    });
    expect(failed.error.code).toBe('TA_ERR_BAD_IMAGE');
    const retry = await c.call('POST', '/api/enroll/retry', { body: { kind: 'faces', name: broken } });
    expect(retry.status).toBe(400);
    expect(retry.json().error.message).toMatch(/is 255 bytes long.*at most 240 bytes.*rename the file shorter/);
    expect(existsSync(join(files.enrollDir, 'failed', 'faces', broken))).toBe(true);
  });

  it('retries a file refused by the service with the same content: the outbox does not take it for a repeat', async () => {
    emulator.faults.add({ method: 'POST', path: '/v1/api/faces', action: 'status', status: 400, times: 1 });
    const png = faceImagePng([10, 200, 10], 72);
    expect((await c.call('POST', '/api/enroll/upload?kind=faces&name=Refused.png', { body: png })).status).toBe(201);
    const failed = await until('the refusal', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      return l.failed.find((i: { name: string; error?: unknown }) => i.name === 'Refused.png' && i.error);
    });
    expect(failed.error.code).toMatch(/^TA_ERR_/);
    expect((await c.call('POST', '/api/enroll/retry', { body: { kind: 'faces', name: 'Refused.png' } })).status).toBe(200);
    const done = await until('the unchanged file in done', async () => {
      const l = (await c.call('GET', '/api/enroll')).json();
      return l.done.find((i: { name: string; result?: unknown }) => i.name === 'Refused.png' && i.result);
    });
    expect(done.result.face_id).toEqual(expect.any(String));
    expect(done.result.duplicate_of_upload).toBeUndefined();
    expect(emulator.state.faces(emulator.terminals[0]!.group_id).filter((f) => f.name === 'Refused')).toHaveLength(1);
  });

  it('plays a phrase in the browser as WAV and lists voices and the registries', async () => {
    const wav = await c.call('GET', '/api/tts?text=Hello%20there&speed=60');
    expect(wav.status).toBe(200);
    expect(wav.headers['content-type']).toBe('audio/wav');
    expect(wav.body.subarray(0, 4).toString()).toBe('RIFF');
    const voices = (await c.call('GET', '/api/voices')).json();
    expect(voices.voices.length).toBeGreaterThan(0);
    expect(voices.total).toBeGreaterThanOrEqual(voices.voices.length);
    expect((await c.call('GET', '/api/voiceprints')).json()).toEqual({ voiceprints: expect.any(Array) });
    expect((await c.call('GET', '/api/speakers')).json()).toEqual({ speakers: expect.any(Array) });
    const badRatio = await c.call('GET', '/api/tts?text=x&volume=300');
    expect(badRatio.status).toBe(400);
  });

  it('says a phrase on the terminal, or tells clearly that it has no sound card', async () => {
    const said = await c.call('POST', '/api/say', { body: { text: 'Hello from the console', volume: 40 } });
    // This machine has no sound card: the answer says so, and the daemon goes on.
    expect(said.status).toBe(503);
    expect(said.json().error).toMatchObject({ code: expect.stringMatching(/^TA_ERR_/), message: expect.stringMatching(/audio\.output_device|ALSA/) });
    expect((await c.call('POST', '/api/say', { body: { text: '' } })).status).toBe(400);
    expect((await c.call('GET', '/api/status')).json().state).toBe('running');
  });

  it('takes a speaker sample as its text then its WAV', async () => {
    const txt = await c.call('POST', '/api/enroll/upload?kind=speakers&name=Narrator.txt', { body: 'Hello, I am the narrator.' });
    expect(txt.status).toBe(201);
    expect(existsSync(join(files.enrollDir, 'speakers', 'Narrator.txt'))).toBe(true);
  });

  it('streams events from the bus', async () => {
    const url = new URL('/api/events', base);
    // The sync is awaited before the test ends: fired and forgotten, it could reach the console
    // after the daemon was stopped and fail as an unhandled ECONNREFUSED in a later test.
    let sync: Promise<unknown> | undefined;
    let timer: NodeJS.Timeout | undefined;
    const first = await new Promise<string>((resolve, reject) => {
      const req = request(url, { headers: { cookie: c.cookie! } }, (res) => {
        expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
        res.once('data', (b: Buffer) => {
          resolve(b.toString());
          req.destroy();
        });
      });
      req.on('error', reject);
      req.end();
      // Something to tell: a sync publishes faces.synced.
      timer = setTimeout(() => { sync = c.call('POST', '/api/faces/sync'); }, 200);
    });
    clearTimeout(timer);
    await sync;
    expect(first.length).toBeGreaterThan(0);
  });

  it('rate-limits logins per address with Retry-After', async () => {
    const other = consoleClient(base);
    const codes: number[] = [];
    let limited;
    for (let i = 0; i < 7; i++) {
      const a = await other.login(`guess ${i}`);
      codes.push(a.status);
      if (a.status === 429) limited = a;
    }
    expect(codes.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(codes.slice(5)).toEqual([429, 429]);
    expect(Number(limited!.headers['retry-after'])).toBeGreaterThan(0);
    // Even the right password waits: the limit is on tries, not on wrong ones.
    expect((await other.login(PASSWORD)).status).toBe(429);
    c.seen.push(...other.seen);
  });

  it('ends the session at logout', async () => {
    expect((await c.call('POST', '/api/logout', { noCsrf: true })).status).toBe(403);
    const saved = c.cookie;
    expect((await c.call('POST', '/api/logout')).status).toBe(200);
    expect((await c.call('GET', '/api/status', { headers: { cookie: saved! }, noCookie: true })).status).toBe(401);
  });

  it('answers a request that is not HTTP with 400 and why (a real TCP client still sending)', async () => {
    const url = new URL(base);
    const junk = `GET /\u0000 HTTP/1.1\r\n${'z'.repeat(300)}`;
    const { got } = await trickle({ port: Number(url.port), host: url.hostname }, junk);
    expect(got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*content-type: application\/json\r\n[^]*\r\n\r\n\{"error":\{"code":"TA_ERR_USAGE","message":"not a valid HTTP\/1\.1 request: [^"]+"\}\}\n$/i);
  });

  it('never sends the terminal secret or the API key in any answer', () => {
    const secret = emulator.terminals[0]!.terminal_secret;
    const apiKey = emulator.apiKey;
    expect(c.seen.length).toBeGreaterThan(30);
    for (const a of c.seen) {
      const all = `${JSON.stringify(a.headers)}\n${a.body.toString('latin1')}`;
      expect(all.includes(secret)).toBe(false);
      expect(all.includes(apiKey)).toBe(false);
    }
  });
});
