import { createServer } from 'node:http';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliProcess, type CliRunResult } from '../helpers/cli.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { JPEG_BYTES, writeWav } from '../client/fixtures.js';
import { formatStatus } from '../../src/daemon/status-format.js';
import type { AgentStatus } from '../../src/control/types.js';
import { faceImage } from '../helpers/face-checker.js';

// Text from outside reaching the operator's terminal (the built CLI against the emulator, and a
// small local server that answers with a hostile error message): control characters are shown
// escaped in human output, JSON output stays exact, and names that the service would not hold
// as given are refused before any request.

const EVIL = '\x1b]0;pwned\x07\x1b[2J\x1b[31mEVIL\x1b[0m';
const BROKEN = 'two\nlines';

let emu: Emulator;
let tmp: { dir: string; remove(): void };
let config: string;

/** No raw C0/C1 control character other than the line breaks of the output itself. */
function expectNoRawControls(text: string): void {
  expect([...text].filter((ch) => { const c = ch.charCodeAt(0); return (c < 0x20 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f); })).toEqual([]);
}

function writeConfig(name: string, faceBase: string, base: string): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, ['service:', `  base_url: ${JSON.stringify(base)}`, `  face_base_url: ${JSON.stringify(faceBase)}`,
    `  terminal_secret: ${JSON.stringify(emu.terminals[0]!.terminal_secret)}`, `  api_key: ${JSON.stringify(emu.apiKey)}`, '  retries: 0',
    `state_dir: ${JSON.stringify(join(tmp.dir, 'state'))}`, ''].join('\n'));
  return path;
}

const cli = (args: string[]): Promise<CliRunResult> => runCliProcess(args, { cwd: tmp.dir });

beforeAll(async () => {
  emu = await startTestEmulator();
  tmp = tmpDirManual('ta-cli-hostile-');
  config = writeConfig('config.yaml', emu.faceBaseUrl, emu.baseUrl);
  emu.seedFaces(emu.terminals[0]!.group_id, [{ name: EVIL, image: JPEG_BYTES }, { name: BROKEN, image: JPEG_BYTES }]);
  // A real portrait: `faces add` runs the face check (enroll.face_check, on by default).
  writeFileSync(join(tmp.dir, 'face.jpg'), faceImage('ok-astronaut.jpg'));
  writeWav(tmp.dir, 'voice.wav', 1);
});
afterAll(async () => {
  await emu?.close();
  tmp?.remove();
});

describe('control characters from outside in human output', () => {
  it('faces list, faces show and faces list --cached show them escaped; --json keeps them exact', async () => {
    const list = await cli(['faces', 'list', '--config', config]);
    expect(list.code).toBe(0);
    expectNoRawControls(list.stdout);
    expect(list.stdout).toContain('\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mEVIL\\x1b[0m');
    expect(list.stdout).toContain('two\\nlines');
    expect(list.stdout.trim().split('\n')).toHaveLength(3);

    const json = await cli(['faces', 'list', '--json', '--config', config]);
    const faces = JSON.parse(json.stdout) as { face_id: string; name: string }[];
    expect(faces.map((f) => f.name).sort()).toEqual([EVIL, BROKEN].sort());

    const show = await cli(['faces', 'show', faces.find((f) => f.name === EVIL)!.face_id, '--config', config]);
    expect(show.code).toBe(0);
    expectNoRawControls(show.stdout);
    expect(show.stdout).toContain('\\x1b[2J');

    expect((await cli(['faces', 'sync', '--config', config])).code).toBe(0);
    const cached = await cli(['faces', 'list', '--cached', '--config', config]);
    expect(cached.code).toBe(0);
    expectNoRawControls(cached.stdout);
    expect(cached.stdout).toContain('\\x1b]0;pwned');
    const cachedJson = JSON.parse((await cli(['faces', 'list', '--cached', '--json', '--config', config])).stdout) as { name: string }[];
    expect(cachedJson.map((f) => f.name).sort()).toEqual([EVIL, BROKEN].sort());
  });

  it('an error message from the service is shown escaped', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `bad request ${EVIL}` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const hostile = writeConfig('hostile.yaml', `http://127.0.0.1:${port}/v1/api`, `http://127.0.0.1:${port}`);
      const r = await cli(['faces', 'list', '--config', hostile]);
      expect(r.code).not.toBe(0);
      expectNoRawControls(r.stderr);
      expect(r.stderr).toContain('\\x1b[2J');
    } finally {
      server.close();
    }
  });

  it('status shows a failed file name and a service message escaped, on one line each', () => {
    const status = {
      version: '1', pid: 1, state: 'running', started_at: '2026-11-23T00:00:00.000Z', uptime_s: 1, config_file: null, state_dir: '/s',
      faces: { cached: 0, last_sync: { ok: false, started_at: 'x', finished_at: 'y', error: `HTTP 500: ${EVIL}`, error_code: 'E', added: 0, updated: 0, removed: 0, failed: 0 }, last_ok_sync_at: null },
      outbox: {}, audio: { output_device: 'default', input_device: 'default', speech: null, voice: null }, components: {},
      reload: { count: 0, last_at: null, last_error: null }, watchdog: { enabled: false, interval_ms: null, last_fed_at: null, failing: [] },
      recent_failures: [{ at: 'now', source: 'enroll', kind: 'faces', name: `new\nline${EVIL}`, error: `faces/new\nline.jpg: ${EVIL}`, code: 'TA_ERR_BAD_NAME' }],
    } as unknown as AgentStatus;
    const out = formatStatus(status);
    expectNoRawControls(out);
    expect(out.split('\n').filter((l) => l.includes('TA_ERR_BAD_NAME'))[0]).toContain('new\\nline\\x1b]0;pwned');
  });
});

describe('names refused by the CLI before any request', () => {
  it('faces add, faces update and voiceprint register refuse a control character with exit 65 and send nothing', async () => {
    const before = emu.requests.length;
    const faceId = '0123456789abcdef0123456789abcdef';
    for (const args of [
      ['faces', 'add', '--name', 'new\nline', 'face.jpg'],
      ['faces', 'add', '--name', EVIL, 'face.jpg'],
      ['faces', 'update', faceId, '--name', 'car\rriage'],
      ['voiceprint', 'register', '--name', 'tab\there', 'voice.wav'],
    ]) {
      const r = await cli([...args, '--config', config]);
      expect(r.code, args.join(' ')).toBe(65);
      expect(r.stderr, args.join(' ')).toMatch(/control character/);
      expectNoRawControls(r.stderr);
    }
    expect(emu.requests.length).toBe(before);
  });

  it('a FIFO given as an image, a WAV or a knowledge file is refused at once (exit 65), never waited on', async () => {
    const fifo = join(tmp.dir, 'pipe.jpg');
    execFileSync('mkfifo', [fifo]);
    for (const args of [['faces', 'add', '--name', 'Pipe', fifo], ['voiceprint', 'register', '--name', 'pipe', fifo], ['knowledge', 'add', '--id', 'pipe', fifo]]) {
      const r = await runCliProcess([...args, '--config', config], { cwd: tmp.dir, timeoutMs: 10_000 });
      expect(r.code, args.join(' ')).toBe(65);
      expect(r.stderr, args.join(' ')).toMatch(/FIFO|not a regular file/);
    }
  });

  it('faces add sends an NFD name in NFC, and finds the face it created', async () => {
    const r = await cli(['faces', 'add', '--name', 'Rene\u0301e', 'face.jpg', '--json', '--config', config]);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { name: string }).name).toBe('Ren\u00e9e');
  });
});
