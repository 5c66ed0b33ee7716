import { readFileSync } from 'node:fs';
import { COMMAND_GROUPS } from './commands.js';
import type { CliContext, CommandSpec, ParsedArgs } from './command.js';
import { AgentError } from '../errors.js';

// The command index: every command's words, options and help text without its code, written at
// build time (scripts/bundle.mjs, from buildCommandIndex) next to the bundle. With it `--help`
// and a command's parsing cost no import of any command module, and running a command imports
// only its own group (commands.ts). Without it (a plain tsc build) every group is loaded.
//
// One line per command, `words<TAB>group<TAB>{the rest, as JSON}`: finding the command needs only
// the words, so a call parses the JSON of the one it runs (parsing the whole index as one JSON
// document cost every command about 0.85 M instructions); `--help` parses them all.

type Details = Omit<CommandSpec, 'run' | 'path'>;

/** The index of COMMAND_GROUPS, in --help order (Infinity, not JSON, is written "Infinity"). */
export async function buildCommandIndex(): Promise<string> {
  const lines: string[] = [];
  for (const group of COMMAND_GROUPS) {
    for (const spec of await group.load()) {
      const { run: _run, path, ...details } = spec;
      if (path.some((w) => !/^[a-z][a-z0-9-]*$/.test(w))) throw new Error(`command index: '${path.join(' ')}' has a word that is not lowercase letters, digits and -`);
      lines.push(`${path.join(' ')}\t${group.name}\t${JSON.stringify(details, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v))}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The index written at build time, or undefined when there is none. */
export function readCommandIndex(file: string): CommandSpec[] | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const commands: CommandSpec[] = [];
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const tab2 = line.indexOf('\t', tab + 1);
    commands.push(new IndexedCommand(line.slice(0, tab).split(' '), line.slice(tab + 1, tab2), line.slice(tab2 + 1)));
  }
  return commands;
}

/** A command of the index: its details parsed when first asked for; `run` imports the group that defines it and runs that group's own spec. */
class IndexedCommand implements CommandSpec {
  #details: Details | undefined;

  constructor(readonly path: string[], readonly group: string, private readonly json: string) {}

  private get details(): Details {
    if (this.#details) return this.#details;
    // Without a reviver: JSON.parse calling one for every key and value is slower. "Infinity" can only stand for a positionals count.
    const d = JSON.parse(this.json) as Details;
    const p = d.positionals as { min: number | string; max: number | string } | undefined;
    if (p?.min === 'Infinity') p.min = Infinity;
    if (p?.max === 'Infinity') p.max = Infinity;
    return (this.#details = d);
  }

  get summary() {
    return this.details.summary;
  }

  get usage() {
    return this.details.usage;
  }

  get description() {
    return this.details.description;
  }

  get options() {
    return this.details.options;
  }

  get positionals() {
    return this.details.positionals;
  }

  async run(args: ParsedArgs, ctx: CliContext): Promise<number | void> {
    const words = this.path.join(' ');
    const loader = COMMAND_GROUPS.find((g) => g.name === this.group);
    const spec = (await loader?.load())?.find((s) => s.path.join(' ') === words);
    if (!spec) throw new AgentError(`'${words}' is in the command index but not in the code: the build is out of date (npm run build)`);
    return spec.run(args, ctx);
  }
}
