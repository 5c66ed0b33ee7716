import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KNOWN_KEYS } from '../../src/config/schema.js';
import { loadConfig } from '../../src/config/load-config.js';
import { DEFAULT_STATE_DIR, TOP_LEVEL_KEYS, scanStateDir, stateDirOf } from '../../src/config/state-dir.js';
import { ConfigError } from '../../src/errors.js';
import { tmpDir } from '../helpers/tmp.js';

// `faces list --cached` reads state_dir from a plain config line by line, without YAML or zod.
// Whenever the scan answers, the full load must give the same folder; whenever the full load
// would report a problem the scan can see (a misspelt section, an odd state_dir), it gives up.

const URLS = 'service:\n  base_url: https://api.example.com\n  face_base_url: https://api.example.com/v1/api\n';
const EXAMPLE = readFileSync(new URL('../../config/config.example.yaml', import.meta.url), 'utf8');

const PLAIN: Record<string, string> = {
  'the example config': EXAMPLE,
  'no state_dir (the default)': URLS,
  'an absolute path': `${URLS}state_dir: /srv/ta # here\n`,
  'a relative path': `${URLS}state_dir: state\n`,
  'single quotes': `${URLS}state_dir: '/srv/it''s'\n`,
  'double quotes': `${URLS}state_dir: "/srv/a b"\n`,
  'state_dir before service': `state_dir: /srv/x\n${URLS}`,
};

const GIVE_UP: Record<string, string> = {
  'a misspelt section': `${URLS}state_dri: /srv/x\n`,
  'a duplicate state_dir': `${URLS}state_dir: /a\nstate_dir: /b\n`,
  'an empty state_dir': `${URLS}state_dir: ''\n`,
  'a null state_dir': `${URLS}state_dir:\n`,
  'a number': `${URLS}state_dir: 12\n`,
  'a mapping': `${URLS}state_dir:\n  a: 1\n`,
  'a continued value': `${URLS}state_dir: /srv/a\n  b\n`,
  'flow style': `{service: {base_url: 'https://api.example.com'}, state_dir: /x}\n`,
  'an alias': `${URLS}x: &a /srv\nstate_dir: *a\n`,
  'a block scalar': `${URLS}state_dir: |\n  /srv\n`,
};

describe('reading state_dir without the YAML library or the schema', () => {
  it('knows the same top-level keys as the schema, and the same default', async () => {
    expect([...TOP_LEVEL_KEYS].sort()).toEqual([...KNOWN_KEYS['']!].sort());
    const dir = tmpDir();
    writeFileSync(join(dir, 'c.yaml'), URLS);
    expect((await loadConfig({ path: join(dir, 'c.yaml'), env: {}, requireSecrets: false })).state_dir).toBe(DEFAULT_STATE_DIR);
  });

  it.each(Object.entries(PLAIN))('%s: the scan gives the folder the full load gives', async (_name, text) => {
    const dir = tmpDir();
    const file = join(dir, 'c.yaml');
    writeFileSync(file, text);
    expect(scanStateDir(text)).not.toBeUndefined();
    const full = await loadConfig({ path: file, env: {}, requireSecrets: false });
    expect(stateDirOf('c.yaml', dir)).toBe(full.state_dir);
  });

  it.each(Object.entries(GIVE_UP))('%s: the scan gives up (the full load decides)', (_name, text) => {
    expect(scanStateDir(text)).toBeUndefined();
  });

  it('a config that cannot be read fails as the full load does', async () => {
    const dir = tmpDir();
    expect(() => stateDirOf('missing.yaml', dir)).toThrow(ConfigError);
    expect(() => stateDirOf('missing.yaml', dir)).toThrow(/config file not found/);
  });
});
