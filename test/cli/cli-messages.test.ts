import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, runCliProcess } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';
import type { Emulator } from '../../src/emulator/index.js';

// The CLI's own help and messages, as a user meets them: the built CLI (`node dist/main.js`),
// its exit code and what it prints on each stream.

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('help for a group of commands', () => {
  it('`faces --help` and `help faces` list the faces commands and exit 0; `faces` alone is a usage error (64)', async () => {
    const a = await runCliProcess(['faces', '--help']);
    const b = await runCliProcess(['help', 'faces']);
    for (const r of [a, b]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^usage: terminal-agent faces <command> \[options\]$/m);
      expect(r.stdout).toMatch(/^ {2}faces list +list the terminal group's face records$/m);
      expect(r.stdout).toMatch(/^ {2}faces add --name N IMAGE +/m);
      expect(r.stdout).not.toMatch(/^ {2}voices /m);
    }
    expect(b.stdout).toBe(a.stdout);
    const bare = await runCliProcess(['faces']);
    expect(bare.code).toBe(64);
    expect(bare.stdout).toBe(a.stdout);
  });

  it('`help faces list` is `faces list --help`; `help` alone is `--help`', async () => {
    const a = await runCliProcess(['help', 'faces', 'list']);
    const b = await runCliProcess(['faces', 'list', '--help']);
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/^usage: terminal-agent faces list/);
    expect(a.stdout).toBe(b.stdout);
    expect((await runCliProcess(['help'])).stdout).toBe((await runCliProcess(['--help'])).stdout);
  });
});

describe('version and typos', () => {
  it('-v, --version and version print the package version', async () => {
    for (const flag of ['-v', '--version', 'version']) {
      const r = await runCliProcess([flag]);
      expect(r.code, flag).toBe(0);
      expect(r.stdout, flag).toBe(`${VERSION}\n`);
      expect(r.stderr, flag).toBe('');
    }
  });

  it('a misspelt command or subcommand gets the nearest one (exit 64)', async () => {
    const cases: [string[], string][] = [
      [['facse', 'list'], "terminal-agent: unknown command 'facse list'; did you mean 'faces list'? (terminal-agent faces --help)\n"],
      [['faces', 'lsit'], "terminal-agent: unknown subcommand 'lsit' of 'faces'; did you mean 'faces list'? (terminal-agent faces --help)\n"],
      [['stauts'], "terminal-agent: unknown command 'stauts'; did you mean 'status'? (terminal-agent status --help)\n"],
      [['help', 'facse'], "terminal-agent: unknown command 'facse'; did you mean 'faces'? (terminal-agent faces --help)\n"],
      [['zzzzzz'], "terminal-agent: unknown command 'zzzzzz'; run 'terminal-agent --help' for the list\n"],
    ];
    for (const [args, stderr] of cases) {
      const r = await runCliProcess(args);
      expect(r.code, args.join(' ')).toBe(64);
      expect(r.stderr, args.join(' ')).toBe(stderr);
      expect(r.stdout).toBe('');
    }
  });
});

describe('commands against the emulator', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startTestEmulator();
  });
  afterAll(async () => {
    await emulator?.close();
  });

  it('`voices` showing a page of the catalogue says how to see the rest; `--all` has no hint', async () => {
    const files = daemonFiles(tmpDir('ta-msg-'), emulator);
    const page = await runCliProcess(['voices', '--config', files.configPath]);
    expect(page.code, page.stderr).toBe(0);
    expect(page.stdout).toMatch(/^10 of (\d+) voice\(s\) \(--all lists every one, --skip N --top N a page of them\)$/m);
    const all = await runCliProcess(['voices', '--all', '--config', files.configPath]);
    const total = /^10 of (\d+)/m.exec(page.stdout)![1];
    expect(all.stdout).toMatch(new RegExp(`^${total} of ${total} voice\\(s\\)$`, 'm'));
  });

  it('`say` with no sound card: one short line naming the device and the fix; ALSA\'s words only in --json details', async () => {
    const dir = tmpDir('ta-msg-');
    const alsa = makeTestAlsa(dir, { brokenDefault: true });
    const files = daemonFiles(dir, emulator);
    const env = { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH! };
    const r = await runCliProcess(['say', 'hello', '--config', files.configPath], { env });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'terminal-agent: cannot play on ALSA device "default" (audio.output_device): ALSA cannot open it (no sound card, or the device is missing);'
      + " fix: connect the speaker, or set audio.output_device to a device that 'aplay -L' lists [TA_ERR_AUDIO_DEVICE]\n",
    );
    const json = await runCliProcess(['say', 'hello', '--json', '--config', files.configPath], { env });
    const body = JSON.parse(json.stderr) as { code: string; alsa: string[]; signal: string };
    expect(body).toMatchObject({ code: 'TA_ERR_AUDIO_DEVICE', signal: 'SIGABRT' });
    expect(body.alsa.join('\n')).toMatch(/Assertion|cannot open device/);
  });

  it('`doctor` counts passed, warned and failed checks: a warn line is not "all passed"', async () => {
    const dir = tmpDir('ta-msg-');
    const files = daemonFiles(dir, emulator);
    // With the daemon running, doctor skips the audio devices with a warn line.
    const daemon = spawnDaemon(files.configPath);
    try {
      await daemon.waitLog(isReady, 20_000, 'the daemon ready');
      const r = await runCliProcess(['doctor', '--config', files.configPath]);
      expect(r.stdout).toMatch(/^warn {2}audio devices +the daemon is running/m);
      const lines = r.stdout.trimEnd().split('\n');
      const ok = lines.filter((l) => l.startsWith('ok ')).length;
      const failed = lines.filter((l) => l.startsWith('FAIL')).length;
      // The audio devices' warn, and the face check's (the tests' configs turn it off).
      const warned = lines.filter((l) => l.startsWith('warn')).length;
      expect(warned).toBe(2);
      expect(lines.at(-1)).toBe(`${ok} of ${ok + failed + warned} checks passed, ${failed ? `${failed} failed, ` : ''}2 warnings`);
      expect(r.stdout).not.toContain('all ');
      const json = JSON.parse((await runCliProcess(['doctor', '--json', '--config', files.configPath])).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({ passed: ok, warned, failed });
    } finally {
      daemon.signal('SIGTERM');
      await daemon.exited;
    }
  });

  it('`faces list --cached` refuses a config with an unknown key, as every other command does (exit 78)', async () => {
    const files = daemonFiles(tmpDir('ta-msg-'), emulator);
    writeFileSync(files.configPath, `${readFileSync(files.configPath, 'utf8')}stat_dir: /tmp\n`);
    const cached = await runCliProcess(['faces', 'list', '--cached', '--config', files.configPath]);
    const check = await runCliProcess(['config', 'check', '--config', files.configPath]);
    expect(cached.code).toBe(78);
    expect(cached.stderr).toMatch(/unknown key 'stat_dir': did you mean 'state_dir'\?/);
    expect(check.code).toBe(78);
    expect(check.stderr).toMatch(/unknown key 'stat_dir'/);
  });
});
