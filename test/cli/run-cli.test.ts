import { describe, expect, it } from 'vitest';
import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src/cli/run-cli.js';
import type { CliContext, CommandSpec } from '../../src/cli/command.js';
import { AuthError, ConfigError, InvalidInputError } from '../../src/errors.js';

function context(env: NodeJS.ProcessEnv = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => (err += d));
  const ctx: CliContext = {
    env, cwd: '/', version: '9.9.9',
    io: { stdout, stderr, stdin: Readable.from([]) },
    shutdown: new AbortController().signal,
    onReload: () => () => undefined,
    onFatal: () => () => undefined,
  };
  return { ctx, out: () => out, err: () => err };
}

const seen: unknown[] = [];
const commands: CommandSpec[] = [
  { path: ['faces'], summary: 'face records', positionals: { min: 0, max: 0 }, run: async () => 0 },
  {
    path: ['faces', 'add'], summary: 'add a face', usage: '--name N IMAGE',
    options: { name: { type: 'string', description: 'face name', valueName: 'N' } },
    positionals: { min: 1, max: 1 },
    run: async (args) => {
      seen.push(args);
      return 0;
    },
  },
  { path: ['fail', 'auth'], summary: 'x', run: async () => { throw new AuthError('face service refused the terminal secret (HTTP 401): check service.terminal_secret_file', { status: 401 }); } },
  { path: ['fail', 'input'], summary: 'x', run: async () => { throw new InvalidInputError('face.gif is not a JPEG, PNG, BMP or WebP image'); } },
  { path: ['fail', 'config'], summary: 'x', run: async () => { throw new ConfigError([{ file: '/etc/x.yaml', line: 3, path: 'faces.sync_interval', message: 'bad duration' }]); } },
  { path: ['fail', 'bug'], summary: 'x', run: async () => { throw new TypeError('boom'); } },
];

describe('runCli', () => {
  it('routes to the longest matching command with parsed options and global args', async () => {
    const { ctx } = context({ TERMINAL_AGENT_CONFIG: '/tmp/c.yaml' });
    seen.length = 0;
    expect(await runCli(commands, ['faces', 'add', '--name', 'Ada', 'ada.jpg', '--json'], ctx)).toBe(0);
    expect(seen[0]).toMatchObject({ values: { name: 'Ada' }, positionals: ['ada.jpg'], global: { configPath: '/tmp/c.yaml', json: true } });
  });

  it('takes the global options before the command as after it', async () => {
    const { ctx } = context({ TERMINAL_AGENT_CONFIG: '/tmp/c.yaml' });
    seen.length = 0;
    expect(await runCli(commands, ['--json', '--config', '/a.yaml', 'faces', 'add', '--name', 'Ada', 'ada.jpg'], ctx)).toBe(0);
    expect(await runCli(commands, ['--config=/b.yaml', 'faces', 'add', 'x.jpg'], ctx)).toBe(0);
    expect(seen[0]).toMatchObject({ values: { name: 'Ada' }, positionals: ['ada.jpg'], global: { configPath: '/a.yaml', json: true } });
    expect(seen[1]).toMatchObject({ positionals: ['x.jpg'], global: { configPath: '/b.yaml', json: false } });
    const help = context();
    expect(await runCli(commands, ['--config', '/a.yaml', '--help'], help.ctx)).toBe(0);
    expect(help.out()).toContain('faces add --name N IMAGE');
    // An unknown command is named as typed, not by the config's path.
    const unknown = context();
    expect(await runCli(commands, ['--config', '/a.yaml', 'fly', 'away'], unknown.ctx)).toBe(64);
    expect(unknown.err()).toBe("terminal-agent: unknown command 'fly away'; run 'terminal-agent --help' for the list\n");
  });

  it('--config wins over the environment, which wins over the default', async () => {
    const { ctx } = context({ TERMINAL_AGENT_CONFIG: '/tmp/c.yaml' });
    seen.length = 0;
    await runCli(commands, ['faces', 'add', 'x.jpg', '--config', '/a.yaml'], ctx);
    expect(seen[0]).toMatchObject({ global: { configPath: '/a.yaml' } });
    const { ctx: ctx2 } = context({});
    await runCli(commands, ['faces', 'add', 'x.jpg'], ctx2);
    expect(seen[1]).toMatchObject({ global: { configPath: '/etc/terminal-agent/config.yaml' } });
  });

  it('prints help for --help and lists commands with no arguments (exit 64)', async () => {
    const a = context();
    expect(await runCli(commands, ['faces', 'add', '--help'], a.ctx)).toBe(0);
    expect(a.out()).toContain('usage: terminal-agent faces add --name N IMAGE');
    const b = context();
    expect(await runCli(commands, [], b.ctx)).toBe(64);
    expect(b.out()).toContain('faces add --name N IMAGE');
  });

  it('exits 64 for an unknown command, an unknown option or a wrong argument count', async () => {
    const a = context();
    expect(await runCli(commands, ['fly'], a.ctx)).toBe(64);
    expect(a.err()).toContain("unknown command 'fly'");
    const b = context();
    expect(await runCli(commands, ['faces', 'add', '--nmae', 'x', 'y.jpg'], b.ctx)).toBe(64);
    expect(b.err()).toContain("Unknown option '--nmae'");
    const c = context();
    expect(await runCli(commands, ['faces', 'add'], c.ctx)).toBe(64);
    expect(c.err()).toContain('takes 1 argument(s), got 0');
    const d = context();
    expect(await runCli(commands, ['faces', 'remove'], d.ctx)).toBe(64);
    expect(d.err()).toContain("unknown subcommand 'remove' of 'faces'");
  });

  it('maps errors to the contract exit codes with a readable message', async () => {
    const a = context();
    expect(await runCli(commands, ['fail', 'auth'], a.ctx)).toBe(77);
    expect(a.err()).toContain('refused the terminal secret');
    expect(a.err()).toContain('[TA_ERR_AUTH]');
    const b = context();
    expect(await runCli(commands, ['fail', 'input'], b.ctx)).toBe(65);
    const c = context();
    expect(await runCli(commands, ['fail', 'config'], c.ctx)).toBe(78);
    expect(c.err()).toContain('/etc/x.yaml:3: faces.sync_interval: bad duration');
    const d = context();
    expect(await runCli(commands, ['fail', 'bug'], d.ctx)).toBe(1);
    expect(d.err()).toContain('unexpected error');
  });

  it('prints errors as JSON on stderr with --json', async () => {
    const a = context();
    expect(await runCli(commands, ['fail', 'auth', '--json'], a.ctx)).toBe(77);
    expect(JSON.parse(a.err())).toMatchObject({ code: 'TA_ERR_AUTH', status: 401 });
  });
});
