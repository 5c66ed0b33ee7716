// Config files an operator (or an attacker with write access to /etc) should not be able to turn
// into an "unexpected error", a hang or a memory spike: every one is a configuration error with
// the file (and the line where there is one), exit 78, from `config check`, `run` and `doctor`;
// a SIGHUP with such a file keeps the running config. Spawns the built CLI (build first).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliProcess } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';
import type { AgentStatus } from '../../src/control/types.js';

const ENV = { TERMINAL_AGENT_TERMINAL_SECRET: 'hostile-config-secret-0123' };

/** 9 aliases of 9 aliases ... 9 levels deep: 9^9 (387 million) strings once expanded. */
function aliasBomb(): string {
  const lines = ['service:', '  base_url: https://api.example.com', '  face_base_url: https://api.example.com/v1/api', 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 9; i++) lines.push(`a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(',')}]`);
  return `${lines.join('\n')}\n`;
}

interface Case {
  name: string;
  make(path: string): void;
  /** What the one problem line says, and its line number when it has one. */
  says: RegExp;
  line?: number;
}

const CASES: Case[] = [
  { name: 'a YAML alias bomb', make: (p) => writeFileSync(p, aliasBomb()), says: /aliases .* expand to too much data/, line: 5 },
  { name: 'a directory', make: (p) => mkdirSync(p), says: /is a directory/ },
  { name: 'a FIFO', make: (p) => execFileSync('mkfifo', [p]), says: /is a FIFO \(named pipe\), not a YAML file/ },
  { name: 'a 50 MB file', make: (p) => writeFileSync(p, `# ${'x'.repeat(50 * 1024 * 1024)}\n`), says: /over the 1 MB a config may have/ },
  { name: 'nesting 100,000 levels deep', make: (p) => writeFileSync(p, `service:\n  base_url: ${'['.repeat(100_000)}\n`), says: /nested too deeply/, line: 2 },
  { name: 'a duplicate key', make: (p) => writeFileSync(p, 'log:\n  level: info\nlog:\n  level: debug\n'), says: /duplicate key/, line: 3 },
  { name: 'binary garbage', make: (p) => writeFileSync(p, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0x0a, 0xff, 0xfe])), says: /binary data/, line: 1 },
  { name: 'Latin-1 text (not UTF-8)', make: (p) => writeFileSync(p, Buffer.from('log:\n  level: info # caf\xe9\n', 'latin1')), says: /not UTF-8 text/, line: 2 },
  { name: 'an empty file', make: (p) => writeFileSync(p, '# nothing yet\n\n'), says: /config file is empty/ },
];

function expectConfigError(r: { code: number | null; stdout: string; stderr: string }, path: string, c: Case): void {
  const all = r.stdout + r.stderr;
  expect(r.code).toBe(78);
  expect(all).not.toMatch(/unexpected error| {4}at /);
  expect(all).toMatch(c.says);
  expect(all).toContain(c.line === undefined ? `${path}:` : `${path}:${c.line}:`);
  expect(all.length).toBeLessThan(4000);
}

describe('hostile config files', () => {
  for (const c of CASES) {
    it(`config check: ${c.name} is a configuration error with the file, exit 78`, async () => {
      const path = join(tmpDir('ta-hcfg-'), 'config.yaml');
      c.make(path);
      expectConfigError(await runCliProcess(['config', 'check', '--config', path], { env: ENV, timeoutMs: 15_000 }), path, c);
    });
  }

  for (const c of CASES.filter((x) => ['a YAML alias bomb', 'a FIFO', 'a 50 MB file'].includes(x.name))) {
    it(`run and doctor: ${c.name} is a configuration error, exit 78`, async () => {
      const path = join(tmpDir('ta-hcfg-'), 'config.yaml');
      c.make(path);
      expectConfigError(await runCliProcess(['run', '--config', path], { env: ENV, timeoutMs: 15_000 }), path, c);
      const doc = await runCliProcess(['doctor', '--config', path], { env: ENV, timeoutMs: 15_000 });
      expect(doc.code).not.toBe(0);
      expect(doc.stdout + doc.stderr).toMatch(c.says);
      expect(doc.stdout + doc.stderr).not.toMatch(/unexpected error| {4}at /);
    });
  }

  it('SIGHUP with an alias bomb, then a FIFO, keeps the running config and logs why', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-hcfg-hup-'), emulator);
    const good = readFileSync(files.configPath, 'utf8');
    const d = spawnDaemon(files.configPath);
    try {
      await d.waitLog(isReady);
      writeFileSync(files.configPath, `${good}${aliasBomb().split('\n').slice(3).join('\n')}`);
      d.signal('SIGHUP');
      const bomb = await d.waitLog((l) => l.msg.startsWith('reload refused'));
      expect(JSON.stringify(bomb)).toMatch(/aliases .* expand to too much data/);

      execFileSync('rm', [files.configPath]);
      execFileSync('mkfifo', [files.configPath]);
      d.signal('SIGHUP');
      await d.waitLog((l) => l.msg.startsWith('reload refused') && /FIFO/.test(JSON.stringify(l)), 10_000, 'the FIFO refused');
      const status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as AgentStatus;
      expect(status.state).toBe('running');
      expect(status.reload.last_error).toMatch(/FIFO/);
      d.signal('SIGTERM');
      expect((await d.exited).code).toBe(0);
    } finally {
      d.signal('SIGKILL');
    }
  }, 40_000);
});
