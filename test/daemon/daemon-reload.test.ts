import { describe, expect, it } from 'vitest';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';
import type { AgentStatus } from '../../src/control/types.js';

describe('SIGHUP reloads the configuration', () => {
  it('keeps the running config when the new file is invalid, then applies a valid one', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-hup-'), emulator);
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    const good = readFileSync(files.configPath, 'utf8');

    writeFileSync(files.configPath, good.replace('sync_interval: 5m', 'sync_interval: often'));
    d.signal('SIGHUP');
    const refused = await d.waitLog((l) => l.msg.startsWith('reload refused'));
    expect(refused.level).toBe('error');
    expect(JSON.stringify(refused.problems)).toContain('faces.sync_interval');
    let status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as AgentStatus;
    expect(status.state).toBe('running');
    expect(status.reload.last_error).toMatch(/sync_interval/);

    // A valid file: log level down to debug, and a new interval (components are rebuilt with it).
    writeFileSync(files.configPath, good.replace('level: info', 'level: debug').replace('sync_interval: 5m', 'sync_interval: 1s'));
    d.signal('SIGHUP');
    const applied = await d.waitLog((l) => l.msg.startsWith('configuration reloaded;'));
    expect(applied.changed).toEqual(expect.arrayContaining(['faces.sync_interval', 'log.level']));
    // The 1 s interval is in effect: more syncs follow within a few seconds, and debug lines appear.
    const runs = () => emulator.requests.filter((r) => r.method === 'GET' && r.path === '/v1/api/faces').length;
    const n = runs();
    await d.waitLog(() => runs() >= n + 2, 10_000, 'syncs at the new interval');
    expect(d.logs().some((l) => l.level === 'debug')).toBe(true);
    status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as AgentStatus;
    expect(status.reload).toMatchObject({ count: 1, last_error: null });

    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });

  it('refuses a new service.ca_file it cannot read before it stops anything: the running agent keeps syncing', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-hup-');
    const files = daemonFiles(dir, emulator);
    const good = readFileSync(files.configPath, 'utf8').replace('sync_interval: 5m', 'sync_interval: 1s');
    writeFileSync(files.configPath, good);
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    const missing = join(dir, 'ca.pem');
    writeFileSync(files.configPath, good.replace('service:\n', `service:\n  ca_file: ${missing}\n`));
    d.signal('SIGHUP');
    const refused = await d.waitLog((l) => l.msg.startsWith('reload refused'), 10_000, 'the reload refused');
    expect(JSON.stringify(refused.problems)).toContain(`service.ca_file`);
    expect(JSON.stringify(refused.problems)).toContain(`cannot read ${missing} (ENOENT)`);
    expect(d.logs().filter((l) => l.msg.startsWith('reload failed'))).toEqual([]);
    // Syncs go on at the running config's 1 s interval: the agent was never stopped.
    const runs = () => emulator.requests.filter((r) => r.method === 'GET' && r.path === '/v1/api/faces').length;
    const n = runs();
    await d.waitLog(() => runs() >= n + 2, 10_000, 'syncs after the refused reload');
    const status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as AgentStatus;
    expect(status.state).toBe('running');
    expect(status.reload.last_error).toContain('service.ca_file');
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  }, 30_000);

  it('exits 1, for systemd to start it afresh, when a reload cannot start the components again (the face cache folder made a file)', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-hup-'), emulator);
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    await d.waitLog((l) => l.msg === 'face cache ready');
    // What a disk gone bad under a running daemon does to the face cache's start-up repair.
    const faces = join(files.stateDir, 'faces');
    renameSync(faces, `${faces}.away`);
    writeFileSync(faces, 'not a folder\n');
    writeFileSync(files.configPath, readFileSync(files.configPath, 'utf8').replace('sync_interval: 5m', 'sync_interval: 10m'));
    d.signal('SIGHUP');
    expect(await d.exited).toEqual({ code: 1, signal: null });
    const why = d.logs().find((l) => l.msg.startsWith('the components could not be started again'));
    expect(why).toMatchObject({ level: 'error', err: expect.stringContaining(faces) });
    expect(why!.msg).toMatch(/exits 1, so that systemd \(Restart=always\) starts it afresh/);
    expect(d.logs().at(-1)).toMatchObject({ msg: 'stopped' });
  }, 30_000);

  it('a fixed credential file plus SIGHUP resumes a face sync stopped by 401', async () => {
    const emulator = await startTestEmulator();
    const group = emulator.terminals[0]!.group_id;
    emulator.seedFaces(group, [{ name: 'Ada', image: Buffer.from('89504e470d0a1a0a', 'hex') }]);
    const files = daemonFiles(tmpDir('ta-hup-'), emulator, { terminalSecret: 'wrong-secret-value-000000' });
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    await d.waitLog((l) => l.component === 'faces' && /401|credential|refused/i.test(JSON.stringify(l)), 15_000, 'the 401');
    let status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as AgentStatus;
    expect((status.components.faces as { state: string }).state).toBe('auth_failed');

    files.write({ terminalSecret: emulator.terminals[0]!.terminal_secret });
    d.signal('SIGHUP');
    await d.waitLog((l) => l.msg.startsWith('configuration reloaded;'));
    await d.waitLog((l) => l.component === 'faces' && l.msg === 'face sync done', 15_000, 'a sync after the reload');
    status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as AgentStatus;
    expect((status.components.faces as { state: string }).state).not.toBe('auth_failed');
    expect(status.faces.last_sync?.ok).toBe(true);
    // Neither the old nor the new secret is in the log.
    expect(d.stdout()).not.toContain('wrong-secret-value-000000');
    expect(d.stdout()).not.toContain(emulator.terminals[0]!.terminal_secret);
  });
});
