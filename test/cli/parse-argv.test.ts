import { describe, expect, it } from 'vitest';
import { parseArgs } from 'node:util';
import { parseArgv } from '../../src/cli/parse-argv.js';
import { loadAllCommands } from '../../src/cli/commands.js';
import type { OptionSpec } from '../../src/cli/command.js';

// run-cli.ts reads arguments with parseArgv, which reads the usual forms itself and leaves the
// rest to node:util parseArgs: for every command's options, both must give the same values and
// positionals, or the same error (code and message), whatever the arguments.

const GLOBAL: Record<string, OptionSpec> = {
  config: { type: 'string', description: 'config file' },
  json: { type: 'boolean', description: 'json' },
  help: { type: 'boolean', short: 'h', description: 'help' },
};

function both(args: string[], options: Record<string, OptionSpec>): { ours: unknown; node: unknown } {
  const run = (f: () => unknown) => {
    try {
      const r = f() as { values: object; positionals: string[] };
      return { values: { ...r.values }, protoless: Object.getPrototypeOf(r.values) === null, positionals: r.positionals };
    } catch (err) {
      return { code: (err as NodeJS.ErrnoException).code, message: (err as Error).message };
    }
  };
  return {
    ours: run(() => parseArgv(args, options)),
    node: run(() => parseArgs({ args, options, allowPositionals: true, strict: true })),
  };
}

/** Argument lists built from a command's own options: every form, good and bad. */
function argvFor(options: Record<string, OptionSpec>): string[][] {
  const lists: string[][] = [[], ['x'], ['-'], ['--'], ['--', '--json'], ['a', 'b', 'c'], ['--nope'], ['-z'], ['-hj'], ['--json=true'], ['--=x'], ['--__proto__'], ['-5'], ['--json', '--json']];
  for (const [name, o] of Object.entries(options)) {
    const flags = [`--${name}`, ...(o.short ? [`-${o.short}`] : [])];
    for (const f of flags) {
      lists.push([f], [f, 'v'], [f, 'v', 'pos'], ['pos', f, 'v'], [f, '-'], [f, '-x'], [f, '--json'], [f, ''], [f, 'a', f, 'b'], [`${f}=v`], [`${f}=`], [`${f}=-x`], [`${f}v`], [f, '--']);
    }
  }
  return lists;
}

describe('parseArgv', () => {
  it('gives what parseArgs gives for every command, good arguments and bad', async () => {
    const specs = [...(await loadAllCommands()).map((c) => ({ ...(c.options ?? {}), ...GLOBAL })), { ...GLOBAL, tag: { type: 'string', multiple: true, short: 't', description: 'many' } } as Record<string, OptionSpec>];
    let compared = 0;
    for (const options of specs) {
      for (const args of argvFor(options)) {
        const { ours, node } = both(args, options);
        expect(ours, JSON.stringify(args)).toEqual(node);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('reads the usual forms without parseArgs, which words the errors', () => {
    expect(parseArgv(['--config', 'c.yaml', 'pos', '--json', '-h'], GLOBAL)).toEqual({ values: { config: 'c.yaml', json: true, help: true }, positionals: ['pos'] });
    expect(() => parseArgv(['--config'], GLOBAL)).toThrow("Option '--config <value>' argument missing");
    expect(() => parseArgv(['--bogus'], GLOBAL)).toThrow("Unknown option '--bogus'");
  });
});
