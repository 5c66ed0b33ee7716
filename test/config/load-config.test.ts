import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, type ConfigProblem } from '../../src/errors.js';
import { loadConfig } from '../../src/config/load-config.js';
import { tmpDir } from '../helpers/tmp.js';

const SECRET_ENV = { TERMINAL_AGENT_TERMINAL_SECRET: 'env-secret-value' };
const URLS = `service:\n  base_url: https://api.example.com/\n  face_base_url: https://api.example.com/v1/api/\n`;

function writeConfig(yaml: string): string {
  const file = join(tmpDir('ta-config-'), 'config.yaml');
  writeFileSync(file, yaml);
  return file;
}

async function problemsOf(yaml: string, env: Record<string, string> = SECRET_ENV): Promise<ConfigProblem[]> {
  const file = writeConfig(yaml);
  const err = await loadConfig({ path: file, env }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  const problems = (err as ConfigError).problems;
  for (const p of problems) expect(p.file).toBe(file);
  return problems;
}

function only(problems: ConfigProblem[]): ConfigProblem {
  expect(problems).toHaveLength(1);
  return problems[0]!;
}

describe('loadConfig: a valid file', () => {
  it('fills defaults, converts units, strips trailing slashes and resolves relative paths from the file', async () => {
    const file = writeConfig(`${URLS}  request_timeout: 500ms\nstate_dir: ./state\nenroll:\n  max_file_size: 512KB\nfaces:\n  sync_interval: 1h\n`);
    const cfg = await loadConfig({ path: file, env: SECRET_ENV });
    const dir = join(file, '..');
    expect(cfg.file).toBe(file);
    expect(cfg.service.base_url).toBe('https://api.example.com');
    expect(cfg.service.face_base_url).toBe('https://api.example.com/v1/api');
    expect(cfg.service.request_timeout).toBe(500);
    expect(cfg.service.retries).toBe(4);
    expect(cfg.service.other_auth).toBe('none');
    expect(cfg.service.allow_insecure_http).toBe(false);
    expect(cfg.faces.sync_interval).toBe(3_600_000);
    expect(cfg.faces.download_concurrency).toBe(8);
    expect(cfg.enroll.max_file_size).toBe(512 * 1024);
    expect(cfg.enroll.settle_time).toBe(1000);
    expect(cfg.state_dir).toBe(join(dir, 'state'));
    expect(cfg.enroll.dir).toBe(join(dir, 'state', 'enroll'));
    expect(cfg.tts).toEqual({ voice: '', volume_ratio: 50, speed_ratio: 50, pitch_ratio: 50, cache_size: 64 * 1024 * 1024, max_duration_per_char: 500, max_duration: 600_000, max_size: 64 * 1024 * 1024 });
    expect(cfg.voiceprint).toEqual({ model: 'voiceprint-turbo', sample_rate: 16000, seconds: 8, recorder: 'arecord' });
    expect(cfg.speaker_training).toEqual({ model: 'tts-turbo', poll_interval: 2000, poll_timeout: 600_000 });
    expect(cfg.control.socket).toBe('/run/terminal-agent/control.sock');
    expect(cfg.log.level).toBe('info');
    expect(cfg.service.terminal_secret).toBe('env-secret-value');
    expect(cfg.service.api_key).toBeUndefined();
    expect(Object.keys(cfg.service)).not.toContain('terminal_secret_file');
  });

  it('accepts plain http to loopback, and to another host only with allow_insecure_http', async () => {
    const local = writeConfig(`service:\n  base_url: http://127.0.0.1:8080\n  face_base_url: http://localhost:8080/v1/api\n`);
    await expect(loadConfig({ path: local, env: SECRET_ENV })).resolves.toMatchObject({ service: { base_url: 'http://127.0.0.1:8080' } });
    const lan = writeConfig(`service:\n  base_url: http://10.0.0.5\n  face_base_url: http://10.0.0.5/v1/api\n  allow_insecure_http: true\n`);
    await expect(loadConfig({ path: lan, env: SECRET_ENV })).resolves.toMatchObject({ service: { face_base_url: 'http://10.0.0.5/v1/api' } });
  });
});

describe('loadConfig: each kind of problem, with its line', () => {
  it('file not found: hints at --config and TERMINAL_AGENT_CONFIG', async () => {
    const path = join(tmpDir(), 'missing.yaml');
    const err = (await loadConfig({ path, env: SECRET_ENV }).catch((e: unknown) => e)) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.exitCode).toBe(78);
    const p = only(err.problems);
    expect(p.file).toBe(path);
    expect(p.message).toMatch(/not found.*--config.*TERMINAL_AGENT_CONFIG/);
  });

  it('YAML syntax error', async () => {
    const p = only(await problemsOf(`${URLS}faces:\n  sync_interval: "5m\n`));
    expect(p.line).toBe(5);
    expect(p.message).toMatch(/^YAML syntax error: /);
  });

  it('duplicate key is a syntax problem at the second occurrence', async () => {
    const p = only(await problemsOf(`${URLS}log:\n  level: info\n  level: debug\n`));
    expect(p.line).toBe(6);
    expect(p.message).toMatch(/duplicate key: this key is already set above/);
  });

  it('unknown key: did-you-mean in its section, a misplaced key, and no near match', async () => {
    const problems = await problemsOf(`${URLS}  request_timout: 15s\nenroll:\n  sync_interval: 5m\nloggin:\n  level: info\nfrobnicate: 1\n`);
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [4, 'service.request_timout'],
      [6, 'enroll.sync_interval'],
      [7, 'loggin'],
      [9, 'frobnicate'],
    ]);
    expect(problems[0]!.message).toBe(`unknown key 'request_timout': did you mean 'request_timeout'?`);
    expect(problems[1]!.message).toMatch(/belongs under faces:/);
    expect(problems[2]!.message).toBe(`unknown key 'loggin': did you mean 'log'?`);
    expect(problems[3]!.message).toMatch(/remove it; known keys here are service, state_dir/);
  });

  it('wrong type', async () => {
    const problems = await problemsOf(`${URLS}  retries: many\n  allow_insecure_http: yes please\nfaces: 5\n`);
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [4, 'service.retries'],
      [5, 'service.allow_insecure_http'],
      [6, 'faces'],
    ]);
    expect(problems[0]!.message).toMatch(/must be a whole number from 0 to 10, got the text "many"/);
    expect(problems[1]!.message).toMatch(/must be true or false/);
    expect(problems[2]!.message).toMatch(/must be a mapping/);
  });

  it('bad durations and sizes say how to write them', async () => {
    const problems = await problemsOf(`${URLS}faces:\n  sync_interval: 300\n  image_recheck_interval: soon\nenroll:\n  max_file_size: 20 potatoes\ntts:\n  cache_size: [1]\n`);
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [5, 'faces.sync_interval'],
      [6, 'faces.image_recheck_interval'],
      [8, 'enroll.max_file_size'],
      [10, 'tts.cache_size'],
    ]);
    expect(problems[0]!.message).toMatch(/"300" has no unit: write it as 300s/);
    expect(problems[1]!.message).toMatch(/"soon" is not a duration: .*500ms, 30s, 5m, 1h/);
    expect(problems[2]!.message).toMatch(/"20 potatoes" is not a size: .*512KB, 20MB/);
    expect(problems[3]!.message).toMatch(/must be a size such as 512KB/);
  });

  it('values out of range', async () => {
    const problems = await problemsOf(
      `${URLS}  request_timeout: 2h\ntts:\n  volume_ratio: 150\n  pitch_ratio: -1\nvoiceprint:\n  sample_rate: 1000\n  seconds: 600\nenroll:\n  upload_concurrency: 0\n  max_file_size: 2GB\n`,
    );
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [4, 'service.request_timeout'],
      [6, 'tts.volume_ratio'],
      [7, 'tts.pitch_ratio'],
      [9, 'voiceprint.sample_rate'],
      [10, 'voiceprint.seconds'],
      [12, 'enroll.upload_concurrency'],
      [13, 'enroll.max_file_size'],
    ]);
    expect(problems[0]!.message).toMatch(/2h is out of range: use a duration from 100ms to 10m0s/);
    expect(problems[1]!.message).toBe('150 is too large: use a value from 0 to 100');
    expect(problems[3]!.message).toBe('1000 is too small: use a value from 8000 to 48000');
    expect(problems[6]!.message).toMatch(/out of range: use a size from 1.0KB to 1.00GB/);
  });

  it('missing base URLs point at the service: line; a missing service section is reported too', async () => {
    const problems = await problemsOf(`state_dir: /tmp/x\nservice:\n  retries: 2\n`);
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [2, 'service.base_url'],
      [2, 'service.face_base_url'],
    ]);
    expect(problems[0]!.message).toMatch(/is required: set it to the service URL, e.g. https:\/\/api.example.com/);
    const none = only(await problemsOf(`log:\n  level: debug\n`));
    expect(none.path).toBe('service');
    expect(none.message).toMatch(/add a service: section/);
  });

  it('face_base_url must end with /v1/api, and the fix is given', async () => {
    const p = only(await problemsOf(`service:\n  base_url: https://api.example.com\n  face_base_url: https://api.example.com/api\n`));
    expect(p.line).toBe(3);
    expect(p.message).toMatch(/must end with \/v1\/api.*did you mean https:\/\/api.example.com\/v1\/api\?/);
  });

  it('invalid URLs and http:// to a non-loopback host', async () => {
    const problems = await problemsOf(`service:\n  base_url: ftp://files.example.com\n  face_base_url: http://192.168.1.20/v1/api\n`);
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [2, 'service.base_url'],
      [3, 'service.face_base_url'],
    ]);
    expect(problems[0]!.message).toMatch(/must start with https:\/\//);
    expect(problems[1]!.message).toMatch(/plain http:\/\/ to 192.168.1.20 .*allow_insecure_http: true/);
    const notUrl = only(await problemsOf(`service:\n  base_url: api.example.com\n  face_base_url: https://api.example.com/v1/api\n`));
    expect(notUrl.message).toMatch(/is not a URL: write it in full/);
  });

  it('bad enum values list the choices', async () => {
    const p = only(await problemsOf(`${URLS}enroll:\n  on_existing_face: replace\n`));
    expect(p.line).toBe(5);
    expect(p.message).toBe('must be one of update | create | skip, got the text "replace"');
  });

  it('control.socket longer than a unix socket address allows', async () => {
    const p = only(await problemsOf(`${URLS}control:\n  socket: /run/${'x'.repeat(120)}.sock\n`));
    expect(p.path).toBe('control.socket');
    expect(p.line).toBe(5);
  });

  it('an empty file says it is empty and where to start', async () => {
    const p = only(await problemsOf(''));
    expect(p.path).toBe('');
    expect(p.message).toMatch(/config file is empty: start from config\/config.example.yaml/);
  });

  it('a file that is not a mapping', async () => {
    const p = only(await problemsOf('- a\n- b\n'));
    expect(p.path).toBe('');
    expect(p.message).toMatch(/must be a YAML mapping/);
  });

  it('several problems at once, in line order', async () => {
    const problems = await problemsOf(
      `service:\n  base_url: https://api.example.com\n  face_base_url: https://api.example.com/v2\n  retries: 99\nfaces:\n  sync_intervall: 5m\nlog:\n  level: verbose\n`,
      {},
    );
    expect(problems.map((p) => [p.line, p.path])).toEqual([
      [1, 'service.terminal_secret'],
      [3, 'service.face_base_url'],
      [4, 'service.retries'],
      [6, 'faces.sync_intervall'],
      [8, 'log.level'],
    ]);
    const err = (await loadConfig({ path: writeConfig('service: 1\nfoo: 2\n'), env: SECRET_ENV }).catch((e: unknown) => e)) as ConfigError;
    expect(err.message).toMatch(/^2 configuration errors:\n/);
  });
});

describe('loadConfig: commands that need no secret of their own (requireSecrets: false)', () => {
  it('loads a config whose secrets reach only the service (systemd credentials)', async () => {
    const file = writeConfig(`${URLS}state_dir: ./state\ncontrol:\n  socket: ./agent.sock\n`);
    await expect(loadConfig({ path: file, env: {} })).rejects.toThrow(/no terminal secret/);
    const cfg = await loadConfig({ path: file, env: {}, requireSecrets: false });
    expect(cfg.service.terminal_secret).toBeUndefined();
    expect(cfg.control.socket).toBe(join(file, '..', 'agent.sock'));
  });

  it('leaves an unreadable secret file unset instead of failing, but still reports other problems', async () => {
    const file = writeConfig(`${URLS}  terminal_secret_file: ./missing-secret\nfaces:\n  sync_interval: soon\n`);
    const err = await loadConfig({ path: file, env: {}, requireSecrets: false }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems.map((p) => p.path)).toEqual(['faces.sync_interval']);
  });
});
