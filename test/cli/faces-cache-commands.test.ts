import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliProcess } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { createControlServer } from '../../src/control/control-server.js';
import { silentLogger } from '../../src/log/logger.js';
import { GROUP, harness, jpeg, listRequests, readIndex } from '../faces/face-fixtures.js';
import type { Emulator } from '../helpers/emulator.js';

// The CLI as an operator runs it (node dist/main.js; build first with `npx tsc -p tsconfig.json`).

function writeConfig(emu: Emulator, stateDir: string, secret = TEST_TERMINAL_SECRET): string {
  const path = join(stateDir, 'config.yaml');
  writeFileSync(path, [
    'service:',
    `  base_url: ${emu.baseUrl}`,
    `  face_base_url: ${emu.faceBaseUrl}`,
    `  terminal_secret: "${secret}"`,
    '  retries: 0',
    `state_dir: ${stateDir}`,
    'control:',
    `  socket: ${join(stateDir, 'control.sock')}`,
    '',
  ].join('\n'));
  return path;
}

describe('faces sync / faces list --cached', () => {
  it('with no daemon, faces sync runs one sync in-process; list --cached then reads it with the service gone', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }, { name: 'bob', image: jpeg() }]);
    const stateDir = tmpDir();
    const config = writeConfig(h.emu, stateDir);

    const sync = await runCliProcess(['faces', 'sync', '--json', '--config', config]);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(0);
    expect(JSON.parse(sync.stdout)).toMatchObject({ ok: true, via: 'local', added: 2, faces_cached: 2 });
    expect(readIndex(join(stateDir, 'faces'))).toHaveLength(2);

    await h.emu.close();
    const list = await runCliProcess(['faces', 'list', '--cached', '--json', '--config', config]);
    expect(list.stderr).toBe("");
    expect(list.code).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<{ name: string; image_path: string }>;
    expect(rows.map((r) => r.name).sort()).toEqual(['alice', 'bob']);
    const human = await runCliProcess(['faces', 'list', '--cached', '--config', config]);
    expect(human.stdout).toMatch(/^FACE_ID\s+NAME\s+ID\s+GROUP_ID\s+IMAGE/);
    expect(human.stdout).toContain('alice');
  });

  it('faces sync exits 77 when the service refuses the terminal secret, and says how to fix it', async () => {
    const h = await harness();
    const stateDir = tmpDir();
    const config = writeConfig(h.emu, stateDir, 'wrong-terminal-secret-123456');
    const res = await runCliProcess(['faces', 'sync', '--config', config]);
    expect(res.code).toBe(77);
    expect(res.stderr).toMatch(/terminal_secret/);
    expect(res.stderr).not.toContain('wrong-terminal-secret-123456');
  });

  it('faces list --cached with no cache yet fails with a hint', async () => {
    const h = await harness();
    const stateDir = tmpDir();
    const res = await runCliProcess(['faces', 'list', '--cached', '--config', writeConfig(h.emu, stateDir)]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/no face cache at .*agent\.db/);
  });

  it('with a daemon listening on the control socket, faces sync asks it instead of syncing itself', async () => {
    const h = await harness();
    h.emu.seedFaces(GROUP, [{ name: 'alice', image: jpeg() }]);
    const faces = h.make();
    const config = writeConfig(h.emu, h.stateDir);
    const server = createControlServer({
      socketPath: join(h.stateDir, 'control.sock'), logger: silentLogger(),
      handlers: {
        status: () => ({}), faces: () => faces.listCached(), syncFaces: () => faces.syncNow('manual'),
        say: async () => ({}), enrollVoiceprint: async () => ({}), metrics: async () => ({ contentType: 'text/plain', text: '' }),
      },
    });
    await server.start();
    try {
      const res = await runCliProcess(['faces', 'sync', '--json', '--config', config]);
      expect(res.code).toBe(0);
      expect(JSON.parse(res.stdout)).toMatchObject({ ok: true, via: 'daemon', added: 1 });
      expect(faces.status().last_sync).toMatchObject({ reason: 'manual', added: 1 });
      expect(listRequests(h.emu)).toBe(1);
    } finally {
      await server.stop();
    }
  });
});
