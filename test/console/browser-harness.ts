import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { hashPassword } from '../../src/util/password-hash.js';
import { faceImagePng, SAMPLE_FACES } from '../../src/daemon/sample-images.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { alsaCaptureDevice, makeCaptureInputs } from '../helpers/alsa-capture.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';

// One real stack for the browser tests of a file: the emulator with faces in the group, the built
// daemon (`node dist/main.js run`) with the console on a loopback port behind a password, a
// microphone made of ALSA's file plugin, and Debian's Chromium driven by playwright-core. Nothing
// is faked but the sound card, which cannot exist here.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const PASSWORD = 'correct horse battery staple';
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts', 'console');

// Without the background-networking flags Chromium keeps calling home, and this closed network
// refuses those connections loudly.
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', '--mute-audio', '--autoplay-policy=no-user-gesture-required'];

export const DESKTOP = { width: 1280, height: 860 };
export const PHONE = { width: 390, height: 844 };

export interface ConsoleStack {
  emulator: Emulator;
  files: DaemonFiles;
  daemon: DaemonProcess;
  browser: Browser;
  /** The console's base URL, e.g. http://127.0.0.1:41234/ */
  url: string;
  groupId: string;
  /** Speech recorded by espeak-ng, 16 kHz mono s16le (the microphone plays it). */
  speechRaw: string;
  close(): Promise<void>;
}

/** `faceCheck`: enroll.face_check.mode (default off: the shared stack's pages drop drawn faces). */
export async function startConsoleStack(opts: { faceCheck?: 'refuse' | 'warn' | 'off' } = {}): Promise<ConsoleStack> {
  const tmp = tmpDirManual('ta-console-ui-');
  const emulator = await startTestEmulator();
  const groupId = emulator.terminals[0]!.group_id;
  emulator.seedFaces(groupId, SAMPLE_FACES.map((f) => ({ name: f.name, image: faceImagePng(f.color, 640) })));
  const inputs = makeCaptureInputs(tmp.dir);
  const mic = alsaCaptureDevice(tmp.dir, inputs.speech);
  // The cheapest scrypt the hash format accepts: the test is about the page, not the cost.
  const hash = await hashPassword(PASSWORD, { ln: 10, r: 8, p: 1 });
  const files = daemonFiles(join(tmp.dir, 'agent'), emulator, {
    inputDevice: mic.device,
    outputDevice: 'default',
    syncInterval: '1h',
    ...(opts.faceCheck ? { faceCheck: opts.faceCheck } : {}),
    extra: ['console:', '  listen: 127.0.0.1:0', `  password_hash: "${hash}"`].join('\n'),
  });
  const daemon = spawnDaemon(files.configPath, { ALSA_CONFIG_PATH: mic.env.ALSA_CONFIG_PATH });
  let browser: Browser | undefined;
  let url: string;
  try {
    await daemon.waitLog(isReady, 20_000, 'the daemon ready line');
    const listening = await daemon.waitLog((l) => l.msg === 'web console listening', 10_000, 'the console listening line');
    url = String(listening.url);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    mkdirSync(ARTIFACTS, { recursive: true });
  } catch (err) {
    daemon.signal('SIGKILL');
    await emulator.close();
    tmp.remove();
    throw err;
  }
  return {
    emulator, files, daemon, browser, url, groupId, speechRaw: inputs.speech,
    async close() {
      await browser?.close().catch(() => undefined);
      daemon.signal('SIGTERM');
      await Promise.race([daemon.exited, new Promise((r) => setTimeout(r, 8000))]);
      daemon.signal('SIGKILL');
      await emulator.close();
      tmp.remove();
    },
  };
}

/** A new browser context (its own cookies) with a page at `viewport`, console errors collected. */
export async function newPage(stack: ConsoleStack, viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await stack.browser.newContext({ viewport, baseURL: stack.url, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  return { context, page, errors };
}

/** A stack and a page for one test file: started before its tests, closed after them. */
export function consoleStackForFile(opts: { faceCheck?: 'refuse' | 'warn' | 'off' } = {}): { stack: ConsoleStack; context: BrowserContext; page: Page; errors: string[] } {
  const s = {} as { stack: ConsoleStack; context: BrowserContext; page: Page; errors: string[] };
  beforeAll(async () => {
    s.stack = await startConsoleStack(opts);
    Object.assign(s, await newPage(s.stack));
  }, 60_000);
  afterAll(async () => {
    await s.context?.close().catch(() => undefined);
    await s.stack?.close();
  }, 30_000);
  return s;
}

/** Logs in through the form, as a person would. */
export async function logIn(page: Page, password = PASSWORD): Promise<void> {
  await page.goto('/');
  await page.getByLabel('Console password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
