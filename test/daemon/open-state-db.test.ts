import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ENTRY, REPO_ROOT } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { mountTmpfs, tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, listenNotify, spawnDaemon } from './daemon-harness.js';

// agent.db cannot be opened on a full file system: SQLite cannot size its -shm file (seen by hand
// on a full loop-mounted ext4: SQLITE_IOERR_SHMSIZE). A full file system cannot be made here without
// root and a mount, so the daemon runs under a file size limit (prlimit, util-linux) that SQLite's
// write meets the same way: the kernel refuses it (EFBIG there, ENOSPC on a full disk) and SQLite
// reports both alike. Raising the limit of the running process is the space coming back.

const FSIZE_LIMIT = 16_384; // below the 32 KiB of SQLite's -shm file

function startOnFullDisk() {
  return (async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-full-');
    const files = daemonFiles(dir, emulator);
    const notify = listenNotify(join(dir, 'notify.sock'));
    // Soft limit only: raising it again needs no privilege.
    const d = spawnDaemon(files.configPath, { NOTIFY_SOCKET: notify.path }, ['run'], REPO_ROOT, CLI_ENTRY, ['prlimit', `--fsize=${FSIZE_LIMIT}:unlimited`, '--']);
    const status = await notify.waitFor((m) => m.includes('EXTEND_TIMEOUT_USEC='));
    return { files, notify, d, status };
  })();
}

describe('agent.db cannot be opened for want of space', () => {
  it('the daemon waits, says why to its log and to systemd (with more start time), and starts once agent.db opens', async () => {
    const { files, notify, d, status } = await startOnFullDisk();
    const db = join(files.stateDir, 'agent.db');
    expect(status).toContain(`STATUS=waiting for agent.db: cannot use the database ${db}: disk I/O error (SQLITE_IOERR_SHMSIZE); the file system of state_dir may be full`);
    expect(status).toMatch(/EXTEND_TIMEOUT_USEC=61000000/);
    await d.waitLog((l) => l.msg.includes('waiting for it, trying again in 2 s'), 10_000, 'a second try');
    expect(notify.count((m) => m.includes('READY=1'))).toBe(0);
    expect(d.child.exitCode).toBeNull();

    execFileSync('prlimit', ['--pid', String(d.pid), '--fsize=unlimited']);
    await d.waitLog(isReady, 15_000);
    await notify.waitFor((m) => m.includes('READY=1'));
    expect(d.logs().some((l) => l.msg === 'agent.db opened; starting')).toBe(true);
    expect((await controlRequest(files.socketPath, 'GET', '/status')).status).toBe(200);
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });

  it('a stop (SIGTERM) while it waits ends it at once, exit 0, leaving nothing locked', async () => {
    const { files, d } = await startOnFullDisk();
    const t0 = Date.now();
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(d.logs().some((l) => l.msg === 'stopped before start-up finished')).toBe(true);
    expect(existsSync(join(files.stateDir, 'agent.pid'))).toBe(false);
  });
});

// A state_dir on a file system with no inode left (a real tmpfs mounted with nr_inodes, as root,
// as CI runs): neither the folder nor the instance lock can be made, which exited 1 before and
// left the terminal without its agent once systemd's start limit was spent.
describe('state_dir cannot be made or locked on a full file system', () => {
  for (const missing of [true, false]) {
    it(`the daemon waits, says why to its log and to systemd, and starts once there is room (${missing ? 'state_dir to be made' : 'state_dir there, agent.lock not'})`, async () => {
      const emulator = await startTestEmulator();
      const dir = tmpDir('ta-full-inodes-');
      const files = daemonFiles(dir, emulator);
      const fs = join(dir, 'fs');
      mkdirSync(fs);
      mountTmpfs(fs, 16, 64);
      // Every inode but the root's taken.
      const fillers: string[] = [];
      for (let i = 0; ; i++) {
        try {
          writeFileSync(join(fs, `filler-${i}`), '');
          fillers.push(join(fs, `filler-${i}`));
        } catch {
          break;
        }
      }
      const stateDir = missing ? join(fs, 'state') : fs;
      writeFileSync(files.configPath, readFileSync(files.configPath, 'utf8').replace(`state_dir: ${files.stateDir}`, `state_dir: ${stateDir}`));
      const notify = listenNotify(join(dir, 'notify.sock'));
      const d = spawnDaemon(files.configPath, { NOTIFY_SOCKET: notify.path });
      const status = await notify.waitFor((m) => m.includes('EXTEND_TIMEOUT_USEC='));
      const lock = join(stateDir, 'agent.lock');
      expect(status).toContain(`STATUS=waiting for state_dir: cannot create the instance lock ${lock}: `);
      expect(status).toContain(missing ? "ENOSPC: no space left on device, mkdir '" : 'unable to open database file (SQLITE_CANTOPEN)');
      expect(status).toContain('; the file system of state_dir is full (no free block or inode): free space there');
      await d.waitLog((l) => l.msg.includes('waiting for it, trying again in 2 s'), 10_000, 'a second try');
      expect(notify.count((m) => m.includes('READY=1'))).toBe(0);
      expect(d.child.exitCode).toBeNull();

      for (const f of fillers) rmSync(f);
      await d.waitLog(isReady, 15_000);
      expect(d.logs().some((l) => l.msg === 'state_dir opened; starting')).toBe(true);
      expect((await controlRequest(files.socketPath, 'GET', '/status')).status).toBe(200);
      d.signal('SIGTERM');
      expect((await d.exited).code).toBe(0);
    });
  }
});
