import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readConfigFile, readConfigFileSync, readPlainConfigSync } from '../../src/config/read-config-file.js';
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
  'U+FFFD in the text': (p) => writeFileSync(p, 'log:\n  level: info # \uFFFD\n'),
  'a char device': () => undefined, // /dev/zero, below
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
    const file = _name === 'a char device' ? '/dev/zero' : join(tmpDir(), 'config.yaml');
    make(file);
    const sync = await outcome(() => readConfigFileSync(file));
    expect(sync).toEqual(await outcome(() => readConfigFile(file)));
    if (_name === 'a plain config' || _name === 'exactly 1 MB' || _name === 'U+FFFD in the text') expect(sync).toHaveProperty('text');
    else if (_name !== 'UTF-8 text with a BOM') expect(sync).toHaveProperty('error', 'ConfigError');
  });
});

describe('readPlainConfigSync', () => {
  // The quick read of `status` and `faces list --cached`: the full reader's text, or undefined
  // (the caller then reads the file the long way, which reports the problem).
  it.each(Object.entries(CASES))('%s: the same text as readConfigFileSync, or undefined', async (name, make) => {
    const file = name === 'a char device' ? '/dev/zero' : join(tmpDir(), 'config.yaml');
    make(file);
    const quick = readPlainConfigSync(file);
    const full = await outcome(() => readConfigFileSync(file));
    if (quick !== undefined) expect(full).toEqual({ text: quick });
    if (name === 'a plain config' || name === 'UTF-8 text with a BOM') expect(quick).toBe((full as { text: string }).text);
    else expect(quick).toBeUndefined(); // over 64 KB, not a regular file, a problem, or U+FFFD
  });
});
