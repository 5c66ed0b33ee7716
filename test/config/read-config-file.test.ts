import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readConfigFile, readConfigFileSync } from '../../src/config/read-config-file.js';
import { tmpDir } from '../helpers/tmp.js';

// `status` and `faces list --cached` read the config with readConfigFileSync, the full load with
// readConfigFile: the same text, or the same problem, for every kind of file.

const CASES: Record<string, (p: string) => void> = {
  'a plain config': (p) => writeFileSync(p, 'state_dir: /var/lib/x\ncontrol:\n  socket: /run/x.sock\n'),
  'UTF-8 text with a BOM': (p) => writeFileSync(p, '\uFEFFstate_dir: /var/lib/café\n'),
  'exactly 1 MB': (p) => writeFileSync(p, `a: ${'x'.repeat(1024 * 1024 - 4)}\n`),
  'one byte over 1 MB': (p) => writeFileSync(p, `a: ${'x'.repeat(1024 * 1024 - 3)}\n`),
  'a missing file': () => undefined,
  'a directory': (p) => mkdirSync(p),
  'a FIFO': (p) => execFileSync('mkfifo', [p]),
  'binary data': (p) => writeFileSync(p, Buffer.from([0x6c, 0x6f, 0x67, 0x0a, 0x00, 0x01])),
  'Latin-1 text': (p) => writeFileSync(p, Buffer.from('log:\n  level: info # caf\xe9\n', 'latin1')),
  'a truncated UTF-8 sequence at the end': (p) => writeFileSync(p, Buffer.from([0x61, 0x3a, 0x20, 0xe2, 0x82])),
  'comments only': (p) => writeFileSync(p, '# nothing\n\n'),
};

async function outcome(f: () => Promise<string> | string): Promise<unknown> {
  try {
    return { text: await f() };
  } catch (err) {
    return { error: (err as Error).constructor.name, message: (err as Error).message, problems: (err as { problems?: unknown }).problems };
  }
}

describe('readConfigFileSync', () => {
  it.each(Object.entries(CASES))('%s: the same text or problem as readConfigFile', async (_name, make) => {
    const file = join(tmpDir(), 'config.yaml');
    make(file);
    const sync = await outcome(() => readConfigFileSync(file));
    expect(sync).toEqual(await outcome(() => readConfigFile(file)));
    if (_name === 'a plain config' || _name === 'exactly 1 MB') expect(sync).toHaveProperty('text');
    else if (_name !== 'UTF-8 text with a BOM') expect(sync).toHaveProperty('error', 'ConfigError');
  });
});
