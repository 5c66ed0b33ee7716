import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editDistance, nearest, unknownKeyMessage } from '../../src/config/did-you-mean.js';
import { loadConfig } from '../../src/config/load-config.js';
import { KNOWN_KEYS, configSchema } from '../../src/config/schema.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { TEST_TERMINAL_SECRET, makeTestConfig } from '../helpers/config.js';

const EXAMPLE = join(REPO_ROOT, 'config', 'config.example.yaml');

describe('did-you-mean', () => {
  it('edit distance and nearest key', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('LEVEL', 'level')).toBe(0);
    expect(nearest('levl', KNOWN_KEYS.log!)).toBe('level');
    expect(nearest('sample-rate', KNOWN_KEYS.voiceprint!)).toBe('sample_rate');
    expect(nearest('xyzzy', KNOWN_KEYS.service!)).toBeUndefined();
  });

  it('points a top-level key that belongs in a section to that section', () => {
    expect(unknownKeyMessage('', 'base_url')).toBe(`unknown key 'base_url' here: it belongs under service:; move it there`);
    expect(unknownKeyMessage('faces', 'state_dir')).toMatch(/belongs at the top level/);
    expect(unknownKeyMessage('', 'face_base_ur')).toMatch(/did you mean 'service.face_base_url'/);
  });
});

describe('schema', () => {
  it('enroll.dir defaults to <state_dir>/enroll, and an explicit dir is kept', () => {
    const urls = { base_url: 'https://a.example', face_base_url: 'https://a.example/v1/api' };
    expect(configSchema.parse({ service: urls, state_dir: '/srv/ta' }).enroll.dir).toBe('/srv/ta/enroll');
    expect(configSchema.parse({ service: urls, enroll: { dir: '/data/in' } }).enroll.dir).toBe('/data/in');
  });
});

describe('config/config.example.yaml', () => {
  const text = readFileSync(EXAMPLE, 'utf8');
  const lines = text.split('\n');

  it('documents every key with a comment', () => {
    for (const [section, keys] of Object.entries(KNOWN_KEYS)) {
      for (const key of keys) {
        const indent = section ? '  '.repeat(section.split('.').length) : '';
        const idx = lines.findIndex((l) => new RegExp(`^${indent}(# )?${key}:`).test(l));
        expect(idx, `${section ? `${section}.` : ''}${key} is missing from the example`).toBeGreaterThan(-1);
        if (KNOWN_KEYS[key] || KNOWN_KEYS[`${section}.${key}`]) continue; // a section header: its keys carry the comments
        const commented = lines[idx]!.includes('#') || lines[idx - 1]!.trimStart().startsWith('#');
        expect(commented, `${key} has no comment`).toBe(true);
      }
    }
  });

  it('passes validation with a secret from the environment, and equals the defaults', async () => {
    const cfg = await loadConfig({ path: EXAMPLE, env: { TERMINAL_AGENT_TERMINAL_SECRET: 'x' } });
    const defaults = configSchema.parse({ service: { base_url: 'https://api.example.com', face_base_url: 'https://api.example.com/v1/api' } });
    const { terminal_secret: _t, ...service } = cfg.service;
    expect({ ...cfg, service, file: undefined }).toEqual({ ...defaults, file: undefined });
  });
});

describe('makeTestConfig', () => {
  it('gives defaults, a secret, loopback URLs and paths in a temp dir', () => {
    const cfg = makeTestConfig();
    expect(cfg.service.terminal_secret).toBe(TEST_TERMINAL_SECRET);
    expect(cfg.service.base_url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect(cfg.state_dir).toMatch(/ta-cfg-/);
    expect(cfg.enroll.dir).toBe(join(cfg.state_dir, 'enroll'));
    expect(cfg.control.socket).toBe(join(cfg.state_dir, 'control.sock'));
    expect(cfg.faces.sync_interval).toBe(300_000);
  });

  it('deep-merges overrides; enroll.dir follows an overridden state_dir', () => {
    const cfg = makeTestConfig({ state_dir: '/tmp/elsewhere', service: { base_url: 'http://127.0.0.1:1234' }, tts: { volume_ratio: 80 } });
    expect(cfg.service.face_base_url).toBe('http://127.0.0.1:9/v1/api');
    expect(cfg.service.base_url).toBe('http://127.0.0.1:1234');
    expect(cfg.service.terminal_secret).toBe(TEST_TERMINAL_SECRET);
    expect(cfg.tts).toMatchObject({ volume_ratio: 80, speed_ratio: 50 });
    expect(cfg.enroll.dir).toBe('/tmp/elsewhere/enroll');
    expect(makeTestConfig({ enroll: { dir: '/x/y' } }).enroll.dir).toBe('/x/y');
  });
});
