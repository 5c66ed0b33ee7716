import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, listenNotify, spawnDaemon } from './daemon-harness.js';

describe('terminal-agent run under a (stand-in) systemd', () => {
  it('sends READY=1 once the socket is up, feeds the watchdog through a cloud outage, drains on SIGTERM and exits 0', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-daemon-');
    const files = daemonFiles(dir, emulator, { logLevel: 'debug', syncInterval: '1s' });
    const notify = listenNotify(join(dir, 'notify.sock'));
    const d = spawnDaemon(files.configPath, { NOTIFY_SOCKET: notify.path, WATCHDOG_USEC: '400000' });

    const ready = await notify.waitFor((m) => m.includes('READY=1'));
    expect(ready).toContain(`MAINPID=${d.pid}`);
    // READY promises a working control socket with the right mode.
    expect(statSync(files.socketPath).mode & 0o777).toBe(0o660);
    const status = await controlRequest(files.socketPath, 'GET', '/status');
    expect(status.status).toBe(200);
    await notify.waitFor((m) => m.includes('WATCHDOG=1'));
    await notify.waitFor((m) => /STATUS=.*last sync .* ok \(0 faces\); outbox 0/.test(m));

    // The cloud goes away: syncs fail, but the loops still turn, so the pings must go on.
    emulator.faults.add({ method: 'GET', path: '/v1/api/faces', action: 'status', status: 503, times: Infinity });
    await d.waitLog((l) => l.component === 'faces' && l.level !== 'info' && /fail/i.test(l.msg), 15_000, 'a failed sync');
    const before = notify.count((m) => m.includes('WATCHDOG=1'));
    await notify.waitFor((m) => /STATUS=.*last sync failed/.test(m));
    const until = Date.now() + 1500;
    while (Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(notify.count((m) => m.includes('WATCHDOG=1'))).toBeGreaterThan(before + 3);

    d.signal('SIGTERM');
    const exit = await d.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(notify.messages.some((m) => m.includes('STOPPING=1'))).toBe(true);
    expect(existsSync(files.socketPath)).toBe(false);
    expect(existsSync(join(files.stateDir, 'agent.pid'))).toBe(false);

    // Journald lines: JSON, one component per subsystem, and never a secret, even at debug level.
    const logs = d.logs();
    for (const c of ['daemon', 'faces', 'control', 'client']) expect(logs.some((l) => l.component === c)).toBe(true);
    const all = d.stdout() + d.stderr();
    expect(all).not.toContain(emulator.terminals[0]!.terminal_secret);
    expect(all).not.toContain(emulator.apiKey);
    expect(logs.find((l) => l.msg === 'stopped')).toMatchObject({ clean: true });
  });

  it('runs and stops cleanly (SIGINT) with no NOTIFY_SOCKET', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-daemon-'), emulator);
    const d = spawnDaemon(files.configPath, { NOTIFY_SOCKET: undefined });
    await d.waitLog(isReady);
    d.signal('SIGINT');
    expect((await d.exited).code).toBe(0);
  });

  it('refuses to start on an invalid config with exit 78 and every problem', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-daemon-'), emulator, { extra: 'faces:\n  sync_interval: soon\n' });
    const d = spawnDaemon(files.configPath);
    const exit = await d.exited;
    expect(exit.code).toBe(78);
    expect(d.stderr()).toMatch(/configuration/);
  });

  it('refuses to start on an agent.db that is not a database: what, where and how to fix it, no stack trace', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-daemon-'), emulator);
    mkdirSync(files.stateDir, { recursive: true });
    const db = join(files.stateDir, 'agent.db');
    writeFileSync(db, 'this was never a database\n'.repeat(200));
    const d = spawnDaemon(files.configPath);
    expect((await d.exited).code).toBe(1);
    expect(d.stderr()).toContain(`cannot use the database ${db}: file is not a database (SQLITE_NOTADB); it is damaged, or not terminal-agent's: move it aside (with its -wal and -shm files) and start again`);
    expect(d.stderr()).not.toMatch(/unexpected error|\n\s+at /);
    expect(readFileSync(db, 'utf8')).toBe('this was never a database\n'.repeat(200));
  });
});
