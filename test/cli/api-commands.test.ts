import { describe, expect, it, beforeAll, afterAll, beforeEach } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { runCliProcess, type CliRunResult } from '../helpers/cli.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { tmpDirManual } from '../helpers/tmp.js';
import sharp from 'sharp';
import { writeWav, HEX32 } from '../client/fixtures.js';
import { faceImage } from '../helpers/face-checker.js';

const FACE_JPEG = faceImage('ok-astronaut.jpg');

// The built CLI (dist/main.js, `npx tsc -p tsconfig.json` first) spawned as a process against the
// emulator: the commands that map to one API call, their output and the contract's exit codes.

let emu: Emulator;
let tmp: { dir: string; remove(): void };
let config: string;
let secret: string;

function writeConfig(name: string, service: Record<string, string | number | boolean>): string {
  const path = join(tmp.dir, name);
  const lines = Object.entries(service).map(([k, v]) => `  ${k}: ${typeof v === 'string' ? JSON.stringify(v) : v}`);
  writeFileSync(path, ['service:', ...lines, `state_dir: ${JSON.stringify(join(tmp.dir, 'state'))}`, 'speaker_training:', '  poll_interval: 100ms', ''].join('\n'));
  return path;
}

/** Exit code check that shows the child's stderr when it is not the expected one. */
function expectExit(r: CliRunResult, code: number): void {
  expect({ code: r.code, stderr: r.code === code ? '' : r.stderr }).toEqual({ code, stderr: '' });
}

const cli = (args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<CliRunResult> =>
  runCliProcess(args, { cwd: tmp.dir, ...opts });

beforeAll(async () => {
  emu = await startTestEmulator({ tts: 'tone' });
  tmp = tmpDirManual('ta-cli-api-');
  secret = emu.terminals[0]!.terminal_secret;
  writeFileSync(join(tmp.dir, 'terminal_secret'), `${secret}\n`);
  config = writeConfig('config.yaml', {
    base_url: emu.baseUrl, face_base_url: emu.faceBaseUrl, terminal_secret_file: join(tmp.dir, 'terminal_secret'),
    api_key: emu.apiKey, retries: 1, request_timeout: '3s',
  });
  // Real portraits: `faces add` and `faces update IMAGE` run the face check (enroll.face_check).
  writeFileSync(join(tmp.dir, 'face.jpg'), FACE_JPEG);
  writeFileSync(join(tmp.dir, 'face.png'), await sharp(faceImage('ok-hopper.jpg')).png().toBuffer());
  writeFileSync(join(tmp.dir, 'group.jpg'), faceImage('group-2-hopper-twice.jpg'));
  writeFileSync(join(tmp.dir, 'notes.jpg'), 'this is a text file named like a picture');
  writeWav(tmp.dir, 'voice.wav', 1);
});
afterAll(async () => {
  await emu?.close();
  tmp?.remove();
});
beforeEach(() => emu.faults.clear());

describe('faces commands', () => {
  it('faces add --name Ada face.jpg, then faces list --json shows Ada with a 32-hex face_id (exit 0)', async () => {
    const add = await cli(['faces', 'add', '--name', 'Ada', 'face.jpg', '--config', config]);
    expect(add.stderr).toBe('');
    expectExit(add, 0);
    const id = /created face "Ada": ([0-9a-f]{32})/.exec(add.stdout)?.[1];
    expect(id).toMatch(HEX32);

    const list = await cli(['faces', 'list', '--json', '--config', config]);
    expectExit(list, 0);
    const faces = JSON.parse(list.stdout) as { face_id: string; name: string }[];
    const ada = faces.find((f) => f.name === 'Ada');
    expect(ada?.face_id).toBe(id);
    expect(ada!.face_id).toMatch(HEX32);

    const table = await cli(['faces', 'list', '--config', config]);
    expect(table.stdout).toMatch(/^FACE_ID\s+NAME\s+ID\s+GROUP_ID/);
    expect(table.stdout).toContain(`${id}  Ada`);
  });

  it('show, update, image -o, delete on one face', async () => {
    const add = await cli(['faces', 'add', '--name', 'Bob', 'face.png', '--json', '--config', config]);
    const bob = JSON.parse(add.stdout) as { face_id: string; name: string };
    expect(bob.name).toBe('Bob');

    const show = await cli(['faces', 'show', bob.face_id, '--json', '--config', config]);
    expect(JSON.parse(show.stdout)).toMatchObject({ face_id: bob.face_id, name: 'Bob' });

    const upd = await cli(['faces', 'update', bob.face_id, 'face.jpg', '--config', config]);
    expectExit(upd, 0);
    expect(upd.stdout).toContain(`updated face "Bob": ${bob.face_id}`);

    const img = await cli(['faces', 'image', bob.face_id, '-o', 'bob.jpg', '--config', config]);
    expectExit(img, 0);
    expect(readFileSync(join(tmp.dir, 'bob.jpg'))).toEqual(FACE_JPEG);

    // A place that takes no file (/proc, whoever runs the test): named, exit 1, nothing fetched.
    const imageGets = () => emu.requests.filter((r) => r.path.endsWith(`${bob.face_id}/image`)).length;
    const before = imageGets();
    const nowhere = await cli(['faces', 'image', bob.face_id, '-o', '/proc/bob.jpg', '--config', config]);
    expectExit(nowhere, 1);
    expect(nowhere.stderr).toContain('cannot write /proc/bob.jpg: no such folder, or the folder takes no new files (ENOENT); choose a file in a folder this user can write to [TA_ERR_OUTPUT]');
    expect(imageGets()).toBe(before);

    const del = await cli(['faces', 'delete', bob.face_id, '--config', config]);
    expect(del).toMatchObject({ code: 0, stdout: `deleted face ${bob.face_id}\n` });
    const gone = await cli(['faces', 'show', bob.face_id, '--config', config]);
    expectExit(gone, 1);
    expect(gone.stderr).toMatch(/not found \(HTTP 404\)/);
  });
});

describe('face check on faces add / update', () => {
  it('refuses a group photo with exit 65 and the sentence, sending nothing; warn sends it with a warning', async () => {
    const before = emu.requests.length;
    const add = await cli(['faces', 'add', '--name', 'Team', 'group.jpg', '--config', config]);
    expectExit(add, 65);
    expect(add.stderr).toContain('group.jpg: 2 faces found: crop the image to one person');
    expect(add.stderr).toContain('TA_ERR_FACE_CHECK');
    const upd = await cli(['faces', 'update', '0123456789abcdef0123456789abcdef', 'group.jpg', '--json', '--config', config]);
    expectExit(upd, 65);
    expect(JSON.parse(upd.stderr.trim().split('\n').at(-1)!)).toMatchObject({ code: 'TA_ERR_FACE_CHECK', face_check: { verdict: 'refused', problem: 'several_faces' } });
    expect(emu.requests.slice(before).filter((r) => r.method !== 'GET')).toEqual([]);

    const warnConfig = join(tmp.dir, 'warn.yaml');
    writeFileSync(warnConfig, `${readFileSync(config, 'utf8')}enroll:\n  face_check:\n    mode: warn\n`);
    const warned = await cli(['faces', 'add', '--name', 'Team', 'group.jpg', '--config', warnConfig]);
    expectExit(warned, 0);
    expect(warned.stderr).toContain('face check (enroll.face_check.mode: warn, sent anyway): 2 faces found: crop the image to one person');
    expect(warned.stdout).toMatch(/created face "Team"/);
  });
});

describe('exit codes', () => {
  it('64 for usage errors', async () => {
    expect((await cli(['faces', 'add', 'face.jpg', '--config', config])).code).toBe(64);
    expect((await cli(['faces', 'list', '--bogus', '--config', config])).code).toBe(64);
    const top = await cli(['voices', '--top', 'many', '--config', config]);
    expectExit(top, 64);
    expect(top.stderr).toContain('--top');
    expect((await cli(['notify', 'knowledge', '{not json', '--config', config])).code).toBe(64);
  });

  it('65 for input checked locally (sniffed image, name over 32 bytes, face id), with nothing sent', async () => {
    const before = emu.requests.length;
    const img = await cli(['faces', 'add', '--name', 'Text', 'notes.jpg', '--config', config]);
    expectExit(img, 65);
    expect(img.stderr).toContain('is not a JPEG, PNG, BMP or WebP image');
    const long = await cli(['voiceprint', 'register', '--name', 'x'.repeat(33), 'voice.wav', '--config', config]);
    expectExit(long, 65);
    expect(long.stderr).toMatch(/33 bytes/);
    const badId = await cli(['faces', 'show', 'not-a-face-id', '--config', config]);
    expectExit(badId, 65);
    const badWav = await cli(['speaker', 'train', '--model', 'tts-turbo', '--text', 'hi', 'face.jpg', '--config', config]);
    expectExit(badWav, 65);
    expect(emu.requests.length).toBe(before);
  });

  it('69 when the service keeps failing (5xx after retries) or cannot be reached', async () => {
    emu.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, times: Infinity });
    const r = await cli(['faces', 'list', '--config', config]);
    expectExit(r, 69);
    expect(r.stderr).toMatch(/HTTP 503/);

    const port = await closedPort();
    const down = writeConfig('down.yaml', { base_url: `http://127.0.0.1:${port}`, face_base_url: `http://127.0.0.1:${port}/v1/api`, terminal_secret: secret, retries: 0 });
    const n = await cli(['notify', 'agent', 'a1', '--config', down]);
    expectExit(n, 69);
    expect(n.stderr).toContain('ECONNREFUSED');
  });

  it('77 for a wrong secret, naming the credential but not its value', async () => {
    const wrong = 'definitely-wrong-secret-4242';
    const r = await cli(['faces', 'list', '--config', config], { env: { TERMINAL_AGENT_TERMINAL_SECRET: wrong } });
    expectExit(r, 77);
    expect(r.stderr).toContain('service.terminal_secret');
    expect(r.stderr + r.stdout).not.toContain(wrong);
    expect(r.stderr + r.stdout).not.toContain(secret);
    const json = await cli(['faces', 'list', '--json', '--config', config], { env: { TERMINAL_AGENT_TERMINAL_SECRET: wrong } });
    expectExit(json, 77);
    expect(JSON.parse(json.stderr)).toMatchObject({ code: 'TA_ERR_AUTH', status: 401 });
    expect(json.stderr).not.toContain(wrong);
  });

  it('78 for a missing config file, and for a missing api_key on a knowledge call', async () => {
    expect((await cli(['faces', 'list', '--config', join(tmp.dir, 'nope.yaml')])).code).toBe(78);
    const noKey = writeConfig('nokey.yaml', { base_url: emu.baseUrl, face_base_url: emu.faceBaseUrl, terminal_secret: secret });
    const r = await cli(['knowledge', 'delete', 'k1', '--config', noKey]);
    expectExit(r, 78);
    expect(r.stderr).toContain('service.api_key');
  });
});

describe('knowledge, notify, voices, speaker, voiceprint commands', () => {
  it('knowledge add from standard input and delete', async () => {
    const add = await cli(['knowledge', 'add', '--id', 'faq-1', '--title', 'FAQ', '-', '--config', config], { input: 'Opening hours: 9 to 5.\n' });
    expectExit(add, 0);
    expect(emu.state.knowledge()).toContainEqual({ id: 'faq-1', title: 'FAQ', content: 'Opening hours: 9 to 5.\n' });
    const del = await cli(['knowledge', 'delete', 'faq-1', '--config', config]);
    expect(del).toMatchObject({ code: 0, stdout: 'deleted knowledge entry faq-1\n' });
    expect((await cli(['knowledge', 'add', '-', '--config', config], { input: '' })).code).toBe(65);
  });

  it('notify agent and notify knowledge with a JSON body', async () => {
    expect((await cli(['notify', 'agent', 'agent-9', '--config', config])).code).toBe(0);
    const k = await cli(['notify', 'knowledge', '{"reason":"edit"}', '--json', '--config', config]);
    expectExit(k, 0);
    expect(JSON.parse(k.stdout)).toMatchObject({ code: 0 });
    expect(emu.state.notifications().map((n) => n.body)).toEqual(expect.arrayContaining([{ agent_id: 'agent-9' }, { reason: 'edit' }]));
  });

  it('voices --all pages through the whole catalogue; filters reach the service', async () => {
    const all = await cli(['voices', '--all', '--top', '15', '--json', '--config', config]);
    expectExit(all, 0);
    const page = JSON.parse(all.stdout) as { speakers: { voice: string }[]; total_speakers_count: number };
    expect(page.speakers.length).toBe(page.total_speakers_count);
    expect(new Set(page.speakers.map((s) => s.voice)).size).toBe(page.total_speakers_count);
    const pages = emu.requests.filter((r) => r.path === '/tts' && r.method === 'GET').slice(-Math.ceil(page.total_speakers_count / 15));
    expect(pages.map((r) => r.query.skip ?? '0')).toEqual(pages.map((_, i) => String(i * 15)));

    const female = await cli(['voices', '--gender', 'female', '--config', config]);
    expectExit(female, 0);
    expect(female.stdout).toMatch(/^VOICE\s+NAME/);
    expect(emu.requests.at(-1)!.query).toMatchObject({ gender: 'female' });
  });

  it('speaker train --wait follows the status to the end; status and delete', async () => {
    const train = await cli(['speaker', 'train', '--model', 'tts-turbo', '--text', 'hello there', 'voice.wav', '--wait', '--json', '--config', config]);
    expect(train.stderr).toBe('');
    expectExit(train, 0);
    const done = JSON.parse(train.stdout) as { speaker_id: string; status: number };
    expect(done.status).toBe(1);
    const st = await cli(['speaker', 'status', '--model', 'tts-turbo', done.speaker_id, '--config', config]);
    expect(st.stdout).toContain('trained');
    expect((await cli(['speaker', 'delete', '--model', 'tts-turbo', done.speaker_id, '--config', config])).code).toBe(0);
    expect((await cli(['speaker', 'status', '--model', 'tts-turbo', done.speaker_id, '--config', config])).code).toBe(1);
    expect((await cli(['speaker', 'train', '--model', 'tts-nope', '--text', 'x', 'voice.wav', '--config', config])).code).toBe(64);
  });

  it('voiceprint register prints the voiceprint_id; delete removes it', async () => {
    const reg = await cli(['voiceprint', 'register', '--name', 'Ada', 'voice.wav', '--json', '--config', config]);
    expectExit(reg, 0);
    const { voiceprint_id: id } = JSON.parse(reg.stdout) as { voiceprint_id: string };
    expect(id).toBeTruthy();
    expect(emu.state.voiceprints().map((v) => v.voiceprint_id)).toContain(id);
    expect((await cli(['voiceprint', 'delete', id, '--config', config])).code).toBe(0);
    expect(emu.state.voiceprints().map((v) => v.voiceprint_id)).not.toContain(id);
  });

  it('--help on a command exits 0 and shows its usage', async () => {
    const r = await cli(['faces', 'add', '--help']);
    expectExit(r, 0);
    expect(r.stdout).toContain('usage: terminal-agent faces add --name N IMAGE');
  });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
