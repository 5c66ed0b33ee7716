import { describe, expect, it } from 'vitest';
import { spawnEmulatorProcess } from '../helpers/emulator.js';
import { runCliProcess } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { jpegImage } from './fixtures.js';
import { call, form } from './http.js';

// The built CLI (`npx tsc -p tsconfig.json` first), spawned as a process.

describe('terminal-agent emulator (CLI)', () => {
  it('--json --port 0 prints the one ready line of the contract, serves, and stops cleanly on SIGTERM', async () => {
    const emu = await spawnEmulatorProcess();
    const firstLine = emu.output().stdout.split('\n')[0]!;
    expect(Object.keys(JSON.parse(firstLine))).toEqual(['base_url', 'face_base_url', 'terminals', 'api_key']);
    const { base_url, face_base_url, terminals, api_key } = emu.ready;
    expect(base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(face_base_url).toBe(`${base_url}/v1/api`);
    expect(terminals).toHaveLength(1);
    expect(terminals[0]!.terminal_secret.length).toBeGreaterThanOrEqual(16);
    expect(api_key.length).toBeGreaterThanOrEqual(16);
    const secret = terminals[0]!.terminal_secret;
    const add = await call(`${face_base_url}/faces`, 'POST', { token: secret, form: form({ name: 'Ada' }, { image: { data: jpegImage(), filename: 'a.jpg', type: 'image/jpeg' } }) });
    expect(add.status).toBe(200);
    const faces = (await call(`${face_base_url}/faces`, 'GET', { token: secret })).json();
    expect(faces).toEqual([{ face_id: expect.stringMatching(/^[0-9a-f]{32}$/), group_id: terminals[0]!.group_id, id: 1, name: 'Ada' }]);
    const done = await emu.stop();
    expect(done.code).toBe(0);
    expect(done.stdout.trim().split('\n')).toHaveLength(1);
    // The credentials appear once, in the ready line, and nowhere in the log.
    expect(done.stderr).not.toContain(secret);
    expect(done.stderr).not.toContain(api_key);
  });

  it('takes terminals, API key, data dir and fault flags; state survives a restart', async () => {
    const data = tmpDir();
    const args = ['--terminal', 'lobby-secret-0001:lobby', '--terminal', 'gate-secret-0002:gate', '--api-key', 'key-0123456789', '--data', data,
      '--fault', 'GET /v1/api/faces 503 x1 retry-after=3', '--verbose'];
    const first = await spawnEmulatorProcess(args);
    expect(first.ready.terminals).toEqual([{ terminal_secret: 'lobby-secret-0001', group_id: 'lobby' }, { terminal_secret: 'gate-secret-0002', group_id: 'gate' }]);
    expect(first.ready.api_key).toBe('key-0123456789');
    const faulted = await call(`${first.ready.face_base_url}/faces`, 'GET', { token: 'lobby-secret-0001' });
    expect(faulted.status).toBe(503);
    expect(faulted.headers['retry-after']).toBe('3');
    await call(`${first.ready.face_base_url}/faces`, 'POST', { token: 'gate-secret-0002', form: form({ name: 'Bob' }, { image: { data: jpegImage(), filename: 'b.jpg', type: 'image/jpeg' } }) });
    await call(`${first.ready.base_url}/knowledge`, 'POST', { token: 'key-0123456789', json: { id: 'k1', content: 'kept' } });
    const stopped = await first.stop();
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toContain('"path":"/v1/api/faces"');
    expect(stopped.stderr).not.toContain('lobby-secret-0001');
    expect(stopped.stderr).not.toContain('key-0123456789');

    const second = await spawnEmulatorProcess(args.slice(0, 8));
    const faces = (await call(`${second.ready.face_base_url}/faces`, 'GET', { token: 'gate-secret-0002' })).json();
    expect(faces).toMatchObject([{ name: 'Bob', group_id: 'gate' }]);
    const img = await call(`${second.ready.face_base_url}/faces/${faces[0].face_id}/image`, 'GET', { token: 'gate-secret-0002' });
    expect(img.body.equals(jpegImage())).toBe(true);
    expect((await call(`${second.ready.base_url}/knowledge/k1`, 'DELETE', { token: 'key-0123456789' })).status).toBe(200);
    expect((await second.stop()).code).toBe(0);
  });

  it('refuses bad flags with exit 64 and does not echo a secret', async () => {
    const bad = await runCliProcess(['emulator', '--terminal', 'only-a-secret-value', '--port', '0']);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/SECRET:GROUP/);
    expect(bad.stderr).not.toContain('only-a-secret-value');
    expect((await runCliProcess(['emulator', '--error-rate', '2', '--port', '0'])).code).toBe(64);
    expect((await runCliProcess(['emulator', '--fault', 'GET /x boom', '--port', '0'])).code).toBe(64);
  });

  it('prints a readable block without --json; chaos flags apply', async () => {
    const { spawn } = await import('node:child_process');
    const { CLI_ENTRY } = await import('../helpers/cli.js');
    const child = spawn(process.execPath, [CLI_ENTRY, 'emulator', '--port', '0', '--terminal', 'abc-secret-123:hall', '--throttle-rate', '1', '--seed', '7'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    await new Promise<void>((resolve) => child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('Ctrl-C')) resolve();
    }));
    const base = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
    const throttled = await call(`${base}/tts`, 'GET');
    expect(throttled.status).toBe(429);
    expect(throttled.headers['retry-after']).toBe('1');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    expect(out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(out).toMatch(/face_base_url: http:\/\/127\.0\.0\.1:\d+\/v1\/api/);
    expect(out).toContain('terminal_secret: abc-secret-123');
  });
});
