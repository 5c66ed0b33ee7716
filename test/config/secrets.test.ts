import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { configSecrets, loadConfig, loadConfigDetailed } from '../../src/config/load-config.js';
import { tmpDir } from '../helpers/tmp.js';
import { makeTestConfig } from '../helpers/config.js';
import { secretsOfCurrent } from '../../src/config/secrets.js';

const URLS = `service:\n  base_url: https://api.example.com\n  face_base_url: https://api.example.com/v1/api\n`;

/** A config with the terminal secret and API key in all four places, each with its own value. */
function setup(opts: { inline?: boolean; file?: boolean; creds?: boolean } = {}) {
  const dir = tmpDir('ta-secrets-');
  const credDir = join(dir, 'creds');
  mkdirSync(credDir);
  writeFileSync(join(dir, 'terminal_secret'), 'from-file-ts\n');
  writeFileSync(join(dir, 'api_key'), 'from-file-key\r\n');
  if (opts.creds !== false) {
    writeFileSync(join(credDir, 'terminal_secret'), 'from-creds-ts\n');
    writeFileSync(join(credDir, 'api_key'), 'from-creds-key');
  }
  const lines = [URLS.trimEnd()];
  if (opts.file !== false) lines.push('  terminal_secret_file: terminal_secret', `  api_key_file: ${join(dir, 'api_key')}`);
  if (opts.inline) lines.push('  terminal_secret: "from-inline-ts"', '  api_key: "from-inline-key"');
  const path = join(dir, 'config.yaml');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { dir, credDir, path };
}

const ENV = { TERMINAL_AGENT_TERMINAL_SECRET: 'from-env-ts', TERMINAL_AGENT_API_KEY: 'from-env-key' };

// blocking: how the CLI reads the file and the secrets (readFileSync); not: how the daemon does.
describe.each([false, true])('secret sources and their precedence: env > credentials dir > *_file > inline (blocking reads: %s)', (blocking) => {
  it('environment wins over everything', async () => {
    const { path, credDir } = setup();
    const { config, secrets } = await loadConfigDetailed({ path, blocking, env: { ...ENV, CREDENTIALS_DIRECTORY: credDir } });
    expect(config.service.terminal_secret).toBe('from-env-ts');
    expect(config.service.api_key).toBe('from-env-key');
    expect(secrets.terminal_secret).toEqual({ source: 'env', origin: 'TERMINAL_AGENT_TERMINAL_SECRET' });
  });

  it('systemd credentials win over *_file, with a trailing newline trimmed', async () => {
    const { path, credDir } = setup();
    const { config, secrets } = await loadConfigDetailed({ path, blocking, env: { CREDENTIALS_DIRECTORY: credDir } });
    expect(config.service.terminal_secret).toBe('from-creds-ts');
    expect(config.service.api_key).toBe('from-creds-key');
    expect(secrets.api_key).toEqual({ source: 'credentials', origin: join(credDir, 'api_key') });
  });

  it('a credentials dir without the file falls through to *_file (relative to the config, CRLF trimmed)', async () => {
    const { path, credDir, dir } = setup({ creds: false });
    const { config, secrets } = await loadConfigDetailed({ path, blocking, env: { CREDENTIALS_DIRECTORY: credDir } });
    expect(config.service.terminal_secret).toBe('from-file-ts');
    expect(config.service.api_key).toBe('from-file-key');
    expect(secrets.terminal_secret).toEqual({ source: 'file', origin: join(dir, 'terminal_secret') });
  });

  it('inline values are used when nothing else is given', async () => {
    const { path } = setup({ file: false, inline: true, creds: false });
    const cfg = await loadConfig({ path, blocking, env: {} });
    expect(cfg.service.terminal_secret).toBe('from-inline-ts');
    expect(cfg.service.api_key).toBe('from-inline-key');
    expect(configSecrets(cfg).sort()).toEqual(['from-inline-key', 'from-inline-ts']);
  });

  it('an empty environment variable does not count as set', async () => {
    const { path } = setup({ file: false, inline: true, creds: false });
    const cfg = await loadConfig({ path, blocking, env: { TERMINAL_AGENT_TERMINAL_SECRET: '' } });
    expect(cfg.service.terminal_secret).toBe('from-inline-ts');
  });

  it('api_key is optional; configSecrets lists only what is set', async () => {
    const dir = tmpDir();
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret: "only-ts"\n`);
    const cfg = await loadConfig({ path, blocking, env: {} });
    expect(cfg.service.api_key).toBeUndefined();
    expect(configSecrets(cfg)).toEqual(['only-ts']);
  });

  it('an empty api_key credential counts as none (the package installs both credentials empty); an empty terminal secret does not', async () => {
    const dir = tmpDir();
    const credDir = join(dir, 'creds');
    mkdirSync(credDir);
    writeFileSync(join(credDir, 'terminal_secret'), 'from-creds-ts\n');
    writeFileSync(join(credDir, 'api_key'), '');
    const path = join(dir, 'c.yaml');
    writeFileSync(path, URLS);
    const cfg = await loadConfig({ path, blocking, env: { CREDENTIALS_DIRECTORY: credDir } });
    expect(cfg.service.api_key).toBeUndefined();
    expect(configSecrets(cfg)).toEqual(['from-creds-ts']);
    writeFileSync(join(credDir, 'terminal_secret'), '');
    const err = await loadConfig({ path, blocking, env: { CREDENTIALS_DIRECTORY: credDir } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(String((err as ConfigError).message)).toMatch(/terminal_secret from systemd credential terminal_secret is empty/);
  });

  it('a higher source makes an unreadable *_file irrelevant (it is not read)', async () => {
    const dir = tmpDir();
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret_file: /nonexistent/ts\n`);
    const cfg = await loadConfig({ path, blocking, env: ENV });
    expect(cfg.service.terminal_secret).toBe('from-env-ts');
  });
});

describe.each([false, true])('secret problems name the source, never the value (blocking reads: %s)', (blocking) => {
  async function problems(path: string, env: Record<string, string> = {}) {
    const err = (await loadConfig({ path, blocking, env }).catch((e: unknown) => e)) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    return err.problems;
  }

  it('missing terminal secret says every way to give one', async () => {
    const path = join(tmpDir(), 'c.yaml');
    writeFileSync(path, URLS);
    const [p, ...rest] = await problems(path);
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ path: 'service.terminal_secret', line: 1 });
    expect(p!.message).toMatch(/terminal_secret_file.*LoadCredential=terminal_secret.*TERMINAL_AGENT_TERMINAL_SECRET/);
  });

  it('a *_file that does not exist is named with its line', async () => {
    const dir = tmpDir();
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret_file: ./nope/ts\n`);
    const [p, ...rest] = await problems(path);
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ path: 'service.terminal_secret_file', line: 4 });
    expect(p!.message).toContain(join(dir, 'nope/ts'));
    expect(p!.message).toMatch(/does not exist/);
  });

  it('a *_file that is a directory, an empty file, and a secret with an inner line break', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'empty'), '\n');
    writeFileSync(join(dir, 'two-lines'), 'line-one-SECRET\nline-two-SECRET\n');
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret_file: ${dir}\n  api_key_file: empty\n`);
    const ps = await problems(path);
    expect(ps.map((p) => [p.line, p.path])).toEqual([
      [4, 'service.terminal_secret_file'],
      [5, 'service.api_key_file'],
    ]);
    expect(ps[0]!.message).toMatch(/is a directory/);
    expect(ps[1]!.message).toMatch(/is empty/);
    writeFileSync(path, `${URLS}  terminal_secret_file: two-lines\n`);
    const [p] = await problems(path);
    expect(p!.message).toMatch(/line break/);
    expect(JSON.stringify(p)).not.toContain('SECRET');
  });

  it('both inline and *_file is a problem', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'ts'), 'file-value');
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret: "inline-value"\n  terminal_secret_file: ts\n`);
    const [p, ...rest] = await problems(path);
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ path: 'service.terminal_secret_file', line: 5 });
    expect(p!.message).toMatch(/keep only one/);
  });

  it('an unreadable credential in $CREDENTIALS_DIRECTORY is reported with its path', async () => {
    const dir = tmpDir();
    mkdirSync(join(dir, 'creds', 'terminal_secret'), { recursive: true }); // EISDIR: unreadable even as root
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret: "inline-value"\n`);
    const [p, ...rest] = await problems(path, { CREDENTIALS_DIRECTORY: join(dir, 'creds') });
    expect(rest).toEqual([]);
    expect(p!.file).toBe(join(dir, 'creds', 'terminal_secret'));
    expect(p!.message).toMatch(/is a directory/);
  });

  it('a non-string inline secret is a type problem that does not echo the value', async () => {
    const path = join(tmpDir(), 'c.yaml');
    writeFileSync(path, `${URLS}  terminal_secret: 918273645\n`);
    const [p, ...rest] = await problems(path);
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ path: 'service.terminal_secret', line: 4 });
    expect(p!.message).toMatch(/quoted/);
    expect(p!.message).not.toContain('918273645');
  });
});

describe('the secrets of the config in use', () => {
  it('follows the config the daemon holds: the secrets of a reloaded config, never those of the one before', () => {
    let current = makeTestConfig({ service: { terminal_secret: 'first-secret-0001', api_key: 'first-key-0001' } });
    const secretsOf = secretsOfCurrent(() => current);
    expect(secretsOf()).toEqual(['first-secret-0001', 'first-key-0001']);
    expect(secretsOf()).toBe(secretsOf());
    current = makeTestConfig({ service: { terminal_secret: 'second-secret-0002' } });
    expect(secretsOf()).toEqual(['second-secret-0002']);
  });
});
