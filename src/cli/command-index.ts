import { readFileSync } from 'node:fs';
import { COMMAND_GROUPS } from './commands.js';
import type { CommandSpec } from './command.js';
import { AgentError } from '../errors.js';

// The command index: every command's words, options and help text without its code, written at
// build time (scripts/bundle.mjs, from buildCommandIndex) next to the bundle. With it `--help`
// and a command's parsing cost no import of any command module, and running a command imports
// only its own group (commands.ts). Without it (a plain tsc build) every group is loaded.

export type CommandMeta = Omit<CommandSpec, 'run'> & { group: string };

/** The index of COMMAND_GROUPS, in --help order, as JSON (Infinity, not JSON, is written "Infinity"). */
export async function buildCommandIndex(): Promise<string> {
  const index: CommandMeta[] = [];
  for (const group of COMMAND_GROUPS) {
    for (const spec of await group.load()) {
      const { run: _run, ...meta } = spec;
      index.push({ ...meta, group: group.name });
    }
  }
  return JSON.stringify(index, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v));
}

/** The index written at build time, or undefined when there is none. */
export function readCommandIndex(file: URL): CommandMeta[] | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  // Without a reviver: JSON.parse calling one for every key and value cost every command about
  // 0.5 ms. "Infinity" can only stand for a positionals count.
  const index = JSON.parse(text) as CommandMeta[];
  for (const c of index) {
    const p = c.positionals as { min: number | string; max: number | string } | undefined;
    if (p?.min === 'Infinity') p.min = Infinity;
    if (p?.max === 'Infinity') p.max = Infinity;
  }
  return index;
}

/** Commands whose `run` imports the group that defines them, and runs that group's own spec. */
export function lazyCommands(index: readonly CommandMeta[]): CommandSpec[] {
  return index.map(({ group, ...meta }) => ({
    ...meta,
    async run(args, ctx) {
      const loader = COMMAND_GROUPS.find((g) => g.name === group);
      const spec = (await loader?.load())?.find((s) => s.path.join(' ') === meta.path.join(' '));
      if (!spec) throw new AgentError(`'${meta.path.join(' ')}' is in the command index but not in the code: the build is out of date (npm run build)`);
      return spec.run(args, ctx);
    },
  }));
}
