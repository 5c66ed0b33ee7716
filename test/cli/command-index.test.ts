import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, runCliProcess } from '../helpers/cli.js';
import { buildCommandIndex, readCommandIndex } from '../../src/cli/command-index.js';
import { loadAllCommands } from '../../src/cli/commands.js';
import { commandHelp, overallHelp } from '../../src/cli/run-cli.js';

// The built CLI answers `--help` and parses arguments from the command index written at build
// time (dist/bundle/commands.idx): it must say exactly what the code says.

const INDEX = join(REPO_ROOT, 'dist', 'bundle', 'commands.idx');

describe('the command index of the build', () => {
  it('is the index of the commands in the code', async () => {
    expect(readFileSync(INDEX, 'utf8')).toBe(await buildCommandIndex());
  });

  it('gives the same help and argument counts as the commands themselves', async () => {
    const all = await loadAllCommands();
    const lazy = readCommandIndex(INDEX)!;
    expect(overallHelp(lazy, '1.0')).toBe(overallHelp(all, '1.0'));
    expect(lazy.map((c) => commandHelp(c))).toEqual(all.map((c) => commandHelp(c)));
    expect(lazy.map((c) => c.positionals)).toEqual(all.map((c) => c.positionals));
  });

  it('the built CLI prints that help', async () => {
    const r = await runCliProcess(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout.replace(/^terminal-agent \S+:/, 'terminal-agent 1.0:')).toBe(`${overallHelp(await loadAllCommands(), '1.0')}\n`);
  });

  it('with no index (a plain tsc build) there is none to read', () => {
    expect(readCommandIndex(join(REPO_ROOT, 'dist', 'no-such-index.idx'))).toBeUndefined();
  });
});
