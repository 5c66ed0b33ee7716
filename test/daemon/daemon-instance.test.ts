import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

// A socket file left behind by a process that died without closing it, like a daemon after SIGKILL.
async function leaveStaleSocket(path: string): Promise<void> {
  const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  await new Promise((resolve) => child.on('close', resolve));
}

describe('one daemon per state', () => {
  it('refuses a second daemon on the same state_dir with a clear message, and the first keeps running', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-inst-'), emulator);
    const first = spawnDaemon(files.configPath);
    await first.waitLog(isReady);
    const second = spawnDaemon(files.configPath);
    const exit = await second.exited;
    expect(exit.code).toBe(1);
    expect(second.stderr()).toContain(`another terminal-agent (pid ${first.pid}) is already running on state_dir ${files.stateDir}`);
    expect(second.stderr()).toContain('TA_ERR_ALREADY_RUNNING');
    // The loser must not have removed the winner's socket.
    expect((await controlRequest(files.socketPath, 'GET', '/status')).status).toBe(200);
    first.signal('SIGTERM');
    expect((await first.exited).code).toBe(0);
  });

  it('a lock file that is not one says so and how to fix it, instead of blaming another daemon', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-inst-'), emulator);
    mkdirSync(files.stateDir, { recursive: true });
    writeFileSync(join(files.stateDir, 'agent.lock'), 'not a lock: some other program wrote here\n'.repeat(20));
    const d = spawnDaemon(files.configPath);
    expect((await d.exited).code).toBe(1);
    expect(d.stderr()).toContain(`cannot take the instance lock ${join(files.stateDir, 'agent.lock')}: file is not a database (SQLITE_NOTADB); no terminal-agent made this file (it holds no data): remove it`);
    expect(d.stderr()).not.toContain('already running');

    rmSync(join(files.stateDir, 'agent.lock'));
    const next = spawnDaemon(files.configPath);
    await next.waitLog(isReady);
    // The lock is taken without a journal: nothing is written for it (so it is taken on a full disk too).
    expect(readdirSync(files.stateDir).filter((n) => n.startsWith('agent.lock'))).toEqual(['agent.lock']);
    expect(statSync(join(files.stateDir, 'agent.lock')).size).toBe(0);
    next.signal('SIGTERM');
    expect((await next.exited).code).toBe(0);
  });

  it('refuses to take over a control socket another live daemon answers on', async () => {
    const emulator = await startTestEmulator();
    const a = daemonFiles(tmpDir('ta-inst-'), emulator);
    const first = spawnDaemon(a.configPath);
    await first.waitLog(isReady);
    const b = daemonFiles(tmpDir('ta-inst-'), emulator);
    writeFileSync(b.configPath, readFileSync(b.configPath, 'utf8').replace(b.socketPath, a.socketPath));
    const second = spawnDaemon(b.configPath);
    expect((await second.exited).code).toBe(1);
    expect(second.stderr()).toContain(`another terminal-agent is already answering on the control socket ${a.socketPath}`);
    expect((await controlRequest(a.socketPath, 'GET', '/status')).status).toBe(200);
  });

  it('after a crash (SIGKILL) starts again: the lock went with the process and the stale socket is replaced', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-inst-'), emulator);
    const crashed = spawnDaemon(files.configPath);
    await crashed.waitLog(isReady);
    crashed.signal('SIGKILL');
    await crashed.exited;
    expect(lstatSync(files.socketPath).isSocket()).toBe(true);

    const next = spawnDaemon(files.configPath);
    await next.waitLog(isReady);
    expect(next.logs().some((l) => l.msg.includes('replacing a stale control socket'))).toBe(true);
    const status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as { pid: number };
    expect(status.pid).toBe(next.pid);
    next.signal('SIGTERM');
    expect((await next.exited).code).toBe(0);
  });

  it('replaces a stale socket file left by another program', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-inst-'), emulator);
    await leaveStaleSocket(files.socketPath);
    expect(existsSync(files.socketPath)).toBe(true);
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    expect((await controlRequest(files.socketPath, 'GET', '/status')).status).toBe(200);
    expect(existsSync(join(files.stateDir, 'agent.pid'))).toBe(true);
  });
});
