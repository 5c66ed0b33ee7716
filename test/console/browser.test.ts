import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { faceImagePng, SAMPLE_FACES } from '../../src/daemon/sample-images.js';
import { encodeWav } from '../../src/audio/wav.js';
import { VOICES } from '../../src/emulator/index.js';
import { DESKTOP, PHONE, PASSWORD, logIn, newPage, screenshot, startConsoleStack, type ConsoleStack } from './browser-harness.js';
import { controlRequest } from '../daemon/daemon-harness.js';

// The web console in a real browser (Debian's Chromium) against a real daemon and the emulator:
// what an operator sees and does on each page. One browser and one daemon for the whole file; the
// tests run in order and build on each other (logged in once, files enrolled stay enrolled).
// Screenshots of each page, at desktop and phone sizes, land in test-artifacts/console/.

let stack: ConsoleStack;
let context: BrowserContext;
let page: Page;
let errors: string[];

beforeAll(async () => {
  stack = await startConsoleStack();
  ({ context, page, errors } = await newPage(stack));
}, 60_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await stack?.close();
}, 30_000);

// Code that runs inside the page is typed structurally: the tests compile without the DOM library.
interface PageGlobals {
  DataTransfer: new () => { items: { add(file: unknown): void } };
  DragEvent: new (type: string, init: object) => unknown;
  File: new (parts: unknown[], name: string, opts: { type: string }) => unknown;
  atob(s: string): string;
  document: { cookie: string };
  __noReload?: boolean;
}
type Img = { naturalWidth: number };
type Audio = { duration: number; src: string };

/** Drops real files on the page's drop zone, as a browser does for a drag from the desktop. */
async function dropFiles(p: Page, files: { name: string; type: string; bytes: Buffer }[]): Promise<void> {
  const payload = files.map((f) => ({ name: f.name, type: f.type, b64: f.bytes.toString('base64') }));
  await p.locator('[data-testid=dropzone]').evaluate((zone, list) => {
    const w = globalThis as unknown as PageGlobals;
    const dt = new w.DataTransfer();
    for (const f of list) {
      const bin = w.atob(f.b64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      dt.items.add(new w.File([bytes], f.name, { type: f.type }));
    }
    for (const type of ['dragenter', 'dragover', 'drop']) zone.dispatchEvent(new w.DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, payload);
}

/** Both sizes of the current page: the phone one after the desktop one. */
async function shootBoth(p: Page, name: string): Promise<void> {
  await screenshot(p, `${name}-desktop`);
  await p.setViewportSize(PHONE);
  await sleep(150);
  await screenshot(p, `${name}-phone`);
  await p.setViewportSize(DESKTOP);
}

/** A marker set in the page: still there later means the page was not reloaded. */
async function markPage(p: Page): Promise<void> {
  await p.evaluate(() => void ((globalThis as unknown as PageGlobals).__noReload = true));
}
async function stillSamePage(p: Page): Promise<boolean> {
  return p.evaluate(() => (globalThis as unknown as PageGlobals).__noReload === true);
}

const facesNamed = (name: string) => stack.emulator.state.faces(stack.groupId).filter((f) => f.name === name);

// Generous: on a loaded 2-core CI machine Chromium, the daemon and the emulator share the cores with other test files.
describe('web console in Chromium', { timeout: 60_000 }, () => {
  test('a wrong password is refused, the right one opens the console with an HttpOnly session', async () => {
    await page.goto('/');
    await expect.poll(() => page.getByLabel('Console password').isVisible()).toBe(true);
    await screenshot(page, 'login-desktop');
    await logIn(page, 'not the password');
    await expect.poll(() => page.locator('[data-testid=login-error]').textContent()).toContain('That password is not right');
    expect(await page.locator('main').count()).toBe(0);
    await page.setViewportSize(PHONE);
    await screenshot(page, 'login-refused-phone');
    await page.setViewportSize(DESKTOP);

    await page.getByLabel('Console password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('[data-ready=overview]').waitFor({ timeout: 10_000 });
    const cookies = await context.cookies();
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) {
      expect(c.httpOnly).toBe(true);
      expect(c.sameSite).toBe('Strict');
    }
    // The session is not readable by scripts in the page.
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.cookie)).toBe('');
  });

  test('overview shows the status of the running daemon, with nothing secret in it', async () => {
    await page.goto('/#/overview');
    await page.locator('[data-ready=overview]').waitFor();
    await expect.poll(() => page.locator('[data-testid=faces-cached]').textContent(), { timeout: 15_000 }).toMatch(new RegExp(`^${SAMPLE_FACES.length}\\s`));
    // Live over the event stream when the daemon has one; asking every few seconds when it has not.
    const stream = await page.evaluate(async () => {
      const stop = new AbortController();
      const r = await fetch('/api/events', { signal: stop.signal });
      stop.abort();
      return { status: r.status, type: r.headers.get('content-type') ?? '' };
    });
    const hasStream = stream.status === 200 && stream.type.startsWith('text/event-stream');
    await expect.poll(() => page.locator('[data-testid=live]').textContent(), { timeout: 10_000 }).toBe(hasStream ? 'Live' : 'Auto-refresh');
    const text = await page.locator('main').innerText();
    for (const heading of ['Face cache', 'Outbox', 'Audio devices', 'Components', 'Recent failures', 'Agent']) expect(text).toContain(heading);
    expect(text).toContain(stack.files.configPath);
    const html = await page.content();
    expect(html).not.toContain(stack.emulator.terminals[0]!.terminal_secret);
    expect(html).not.toContain(stack.emulator.apiKey);
    await shootBoth(page, 'overview');
  });

  test('faces: the cached group as a gallery of small lazy thumbnails, searchable, with the cache age', async () => {
    await page.goto('/#/faces');
    await page.locator('[data-ready=faces]').waitFor();
    const tiles = page.locator('[data-testid=gallery] .tile');
    await expect.poll(() => tiles.count()).toBe(SAMPLE_FACES.length);
    expect((await tiles.allInnerTexts()).map((t) => t.trim()).sort()).toEqual(SAMPLE_FACES.map((f) => f.name).sort());
    expect(await page.locator('[data-testid=freshness]').innerText()).toMatch(/3 faces in the local cache · synced (just now|\d+ s ago)/);
    const imgs = page.locator('[data-testid=gallery] img');
    expect(await imgs.first().getAttribute('loading')).toBe('lazy');
    // Each tile is a thumbnail (at most 256 px), not the 640 px original.
    await expect.poll(() => imgs.evaluateAll((list) => list.map((i) => (i as unknown as Img).naturalWidth))).toEqual(SAMPLE_FACES.map(() => 256));
    await shootBoth(page, 'faces');

    await page.getByLabel('Search faces').fill('grace');
    await expect.poll(() => tiles.allInnerTexts()).toEqual(['Grace Hopper']);
    await page.getByLabel('Search faces').fill('nobody at all');
    await expect.poll(() => page.locator('main').innerText()).toContain('No face matches');
    await page.getByLabel('Search faces').fill('');
    await tiles.first().click();
    const full = page.locator('dialog.lightbox img');
    await expect.poll(() => full.evaluate((i) => (i as unknown as Img).naturalWidth)).toBe(640);
    await page.getByRole('button', { name: 'Close' }).click();
  });

  test('faces: syncs in quick succession keep the gallery current, and a slow list is asked for about once per ten times what it took', async () => {
    await page.goto('/#/faces');
    await page.locator('[data-ready=faces]').waitFor();
    const tiles = page.locator('[data-testid=gallery] .tile');
    await expect.poll(() => tiles.count()).toBe(stack.emulator.state.faces(stack.groupId).length);
    // The one thing faked: the list answers as slowly as a group of 10,000 faces makes it on a Pi's
    // quarter core (about half a second); such a group cannot be synced in a test's time here.
    let asked = 0;
    await page.route('**/api/faces', async (route) => {
      asked++;
      await sleep(500);
      await route.continue();
    });
    try {
      // Twelve syncs about 250 ms apart, as an enrollment burst into a large group makes them, a new
      // face in the group before the last. Each announces itself to the page (faces.synced).
      for (let i = 0; i < 12; i++) {
        if (i === 11) stack.emulator.seedFaces(stack.groupId, [{ name: 'Katherine Johnson', image: faceImagePng([90, 60, 200], 200) }]);
        const r = await controlRequest(stack.files.socketPath, 'POST', '/faces/sync');
        expect(r.status).toBe(200);
        await sleep(250);
      }
      // The page asked once (the next ask waits 10 x its half second); before, every sync made one.
      expect(asked).toBeGreaterThanOrEqual(1);
      expect(asked).toBeLessThanOrEqual(2);
      // And the last sync's face is in the gallery once that wait is over, without a reload.
      await expect.poll(() => tiles.allInnerTexts(), { timeout: 15_000 }).toContain('Katherine Johnson');
      expect(asked).toBeLessThanOrEqual(3);
    } finally {
      await page.unroute('**/api/faces');
    }
  });

  test('a picture dropped on the enrollment page is written to faces/, enrolled exactly once and shown done, without a reload', async () => {
    await page.goto('/#/enrollment');
    await page.locator('[data-ready=enrollment]').waitFor();
    await markPage(page);
    await dropFiles(page, [{ name: 'Marie Curie.png', type: 'image/png', bytes: faceImagePng([210, 170, 140], 200) }]);
    const row = page.locator('[data-testid=uploads] li[data-name="Marie Curie.png"]');
    await expect.poll(() => row.innerText()).toMatch(/uploaded|sending|enrolled/);
    const done = page.locator('#lane-done li[data-name="Marie Curie.png"]');
    await done.waitFor({ timeout: 20_000 });
    expect(await done.locator('img').count()).toBe(1);
    await expect.poll(() => row.innerText()).toContain('enrolled');
    expect(await stillSamePage(page)).toBe(true);

    const enroll = stack.files.enrollDir;
    expect(existsSync(join(enroll, 'done', 'faces', 'Marie Curie.png'))).toBe(true);
    expect(readdirSync(join(enroll, 'faces')).filter((n) => !n.startsWith('.'))).toEqual([]);
    expect(readdirSync(join(enroll, 'faces')).filter((n) => n.includes('Marie'))).toEqual([]);
    // Exactly once: one face of that name in the service, and still one a moment later.
    expect(facesNamed('Marie Curie')).toHaveLength(1);
    await sleep(1500);
    expect(facesNamed('Marie Curie')).toHaveLength(1);
    expect(await page.locator('li[data-name="Marie Curie.png"]:not(.sending):not(.sent)').count()).toBe(1);
  });

  test('a broken file dropped into the folder shows up failed with its reason; fixed and retried it is enrolled', async () => {
    await page.goto('/#/enrollment');
    await page.locator('[data-ready=enrollment]').waitFor();
    await markPage(page);
    // Straight into the folder on the terminal, as an operator copying files would.
    writeFileSync(join(stack.files.enrollDir, 'faces', 'Broken Face.png'), Buffer.from('this is not a picture at all, just text'));
    const failed = page.locator('#lane-failed li[data-name="Broken Face.png"]');
    await failed.waitFor({ timeout: 20_000 });
    const reason = await failed.locator('[data-testid=reason]').innerText();
    expect(reason.length).toBeGreaterThan(10);
    expect(await stillSamePage(page)).toBe(true);
    await shootBoth(page, 'enrollment');

    const failedCopy = join(stack.files.enrollDir, 'failed', 'faces', 'Broken Face.png');
    expect(existsSync(failedCopy)).toBe(true);
    writeFileSync(failedCopy, faceImagePng([120, 160, 220], 160));
    await failed.getByRole('button', { name: 'Retry' }).click();
    await page.locator('#lane-done li[data-name="Broken Face.png"]').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('#lane-failed li[data-name="Broken Face.png"]').count()).toBe(0);
    expect(facesNamed('Broken Face')).toHaveLength(1);
    expect(await stillSamePage(page)).toBe(true);
  });

  test('speech: the catalogue filters, a phrase plays in the browser and on the terminal', async () => {
    await page.goto('/#/speech');
    await page.locator('[data-ready=speech]').waitFor();
    const rows = page.locator('[data-testid=voices] tbody tr');
    await expect.poll(() => rows.count()).toBe(VOICES.length);
    await page.getByLabel('Filter by language').selectOption('english');
    await expect.poll(() => rows.count()).toBe(VOICES.filter((v) => v.language === 'english').length);
    await page.getByLabel('Filter by gender').selectOption('female');
    await expect.poll(() => rows.count()).toBe(VOICES.filter((v) => v.language === 'english' && v.gender === 'female').length);
    await rows.filter({ hasText: 'en_female_emma' }).getByRole('button', { name: 'Use' }).click();
    expect(await page.getByLabel('Voice', { exact: true }).inputValue()).toBe('en_female_emma');

    await page.getByLabel('Text').fill('Welcome to the front desk.');
    await page.getByRole('button', { name: 'Play in this browser' }).click();
    const player = page.locator('[data-testid=player]');
    await expect.poll(() => player.evaluate((a) => (a as unknown as Audio).duration), { timeout: 15_000 }).toBeGreaterThan(0.3);
    expect(await player.evaluate((a) => (a as unknown as Audio).src)).toContain('voice=en_female_emma');

    await page.getByRole('button', { name: 'Say on the terminal' }).click();
    await expect.poll(() => page.locator('main').innerText(), { timeout: 20_000 }).toContain('Played on the terminal');
    await shootBoth(page, 'speech');
  });

  test('voiceprints: recorded on the terminal\'s microphone with the level arriving live, then listed', async () => {
    await page.goto('/#/voice');
    await page.locator('[data-ready=voice]').waitFor();
    await page.getByLabel('Voiceprint name').fill('alice');
    await page.getByLabel('Seconds to record').fill('2');
    await page.getByRole('button', { name: 'Record on the terminal' }).click();
    await page.locator('[data-testid=meter]').waitFor({ timeout: 5000 });
    const verdict = page.locator('[data-testid=verdict]');
    await verdict.waitFor({ timeout: 30_000 });
    expect(await verdict.innerText()).toMatch(/Registered as \S+/);
    // The level meter was fed by voiceprint.level events while recording; its last reading stays.
    expect(await page.locator('[data-testid=meter]').innerText()).toMatch(/level -?\d+ dBFS, peak -?\d+ dBFS/);
    await expect.poll(() => page.locator('[data-testid=voiceprints] tbody').innerText()).toContain('alice');
    await shootBoth(page, 'voice');
  });

  test('speakers: a recording dropped with its transcript is trained, and the training status shows', async () => {
    await page.goto('/#/enrollment');
    await page.locator('[data-ready=enrollment]').waitFor();
    const wav = encodeWav({ sampleRate: 16000, channels: 1, bitsPerSample: 16 }, readFileSync(stack.speechRaw));
    await dropFiles(page, [
      { name: 'Narrator.wav', type: 'audio/wav', bytes: wav },
      { name: 'Narrator.txt', type: 'text/plain', bytes: Buffer.from('Hello, this is a voiceprint test.') },
    ]);
    const done = page.locator('#lane-done li[data-name="Narrator.wav"]');
    await done.waitFor({ timeout: 20_000 });
    expect(await done.getByRole('button', { name: 'Play Narrator.wav' }).count()).toBe(1);

    await page.goto('/#/voice');
    await page.locator('[data-ready=voice]').waitFor();
    await expect.poll(() => page.locator('[data-testid=speakers] tbody').innerText(), { timeout: 20_000 }).toMatch(/Narrator[\s\S]*trained/);
    await shootBoth(page, 'voice-speakers');
    // The refused login is the one failed request the page made on purpose.
    expect(errors.filter((e) => !/status of 401.*\/api\/login/.test(e))).toEqual([]);
  });

  test('with the cloud unreachable the gallery still shows the cache, and the overview names the failure and its fix', async () => {
    const cached = stack.emulator.state.faces(stack.groupId).length;
    stack.emulator.faults.add({ path: '/v1/api/*', action: 'status', status: 503, times: Infinity });
    try {
      await page.goto('/#/faces');
      await page.locator('[data-ready=faces]').waitFor();
      await page.getByRole('button', { name: 'Sync now' }).click();
      await expect.poll(() => page.locator('main').innerText(), { timeout: 20_000 }).toMatch(/sync failed/i);
      expect(await page.locator('[data-testid=gallery] .tile').count()).toBe(cached);
      await screenshot(page, 'faces-offline-desktop');

      await page.goto('/#/overview');
      await page.locator('[data-ready=overview]').waitFor();
      const health = page.locator('[data-testid=health]');
      await expect.poll(() => health.innerText(), { timeout: 10_000 }).toMatch(/need(s)? attention/);
      expect(await health.innerText()).toMatch(/Fix:/);
      expect(await health.innerText()).toMatch(/face sync failed/i);
      await screenshot(page, 'overview-problem-desktop');

      // The cloud is back: the fix the overview offers, run from the page, clears the problem.
      stack.emulator.faults.clear();
      await health.getByRole('button', { name: 'Sync now' }).click();
      await expect.poll(() => health.innerText(), { timeout: 15_000 }).not.toMatch(/face sync failed/i);
    } finally {
      stack.emulator.faults.clear();
    }
  });
  test('logging out ends the session: the login form is back and the API refuses the old cookie', async () => {
    await page.goto('/#/overview');
    await page.locator('[data-ready=overview]').waitFor();
    const before = await context.cookies();
    await page.getByRole('button', { name: 'Log out' }).click();
    await expect.poll(() => page.getByLabel('Console password').isVisible()).toBe(true);
    const res = await fetch(new URL('/api/status', stack.url), { headers: { cookie: before.map((c) => `${c.name}=${c.value}`).join('; ') } });
    expect(res.status).toBe(401);

    // Guessing is slowed down: after a few wrong passwords the form says how long to wait and refuses to send.
    const error = page.locator('[data-testid=login-error]');
    let status = 0;
    for (let i = 0; i < 10 && status !== 429; i++) {
      await page.getByLabel('Console password').fill(`guess ${i}`);
      const answer = page.waitForResponse((r) => r.url().endsWith('/api/login'));
      await page.getByRole('button', { name: 'Log in' }).click();
      status = (await answer).status();
      expect([401, 429]).toContain(status);
    }
    expect(status).toBe(429);
    await expect.poll(() => error.textContent()).toMatch(/Too many attempts\. Try again in \d+ s\./);
    await page.getByLabel('Console password').fill(PASSWORD);
    expect(await page.getByRole('button', { name: 'Log in' }).isDisabled()).toBe(true);
    await screenshot(page, 'login-rate-limited-desktop');
  });
});
