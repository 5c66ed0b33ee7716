import type { CliContext, CommandSpec, GlobalArgs, OptionSpec, ParsedArgs } from './command.js';
import { parseArgs } from 'node:util';
import { writeErr, writeJsonErr, writeLine } from './output.js';
import { nearest } from '../util/nearest-word.js';
import { ExitCode, UsageError, exitCodeOf, isAgentError, isProgramReplaced, ConfigError, formatProblem } from '../errors.js';

export const DEFAULT_CONFIG_PATH = '/etc/terminal-agent/config.yaml';

export const GLOBAL_OPTIONS = {
  config: { type: 'string', description: 'config file (else $TERMINAL_AGENT_CONFIG, else /etc/terminal-agent/config.yaml)', valueName: 'PATH' },
  json: { type: 'boolean', description: 'machine-readable output' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
} as const;

/**
 * How many leading words of argv are GLOBAL_OPTIONS (`--json`, `--config PATH`, `--config=PATH`,
 * `-h`): `terminal-agent --json status` is the same call as `terminal-agent status --json`.
 */
function leadingGlobals(argv: readonly string[]): number {
  const globals: Record<string, OptionSpec> = GLOBAL_OPTIONS;
  let i = 0;
  for (;;) {
    const a = argv[i] ?? '';
    const name = a.startsWith('--') ? a.slice(2).split('=', 1)[0]! : Object.keys(globals).find((k) => globals[k]!.short !== undefined && a === `-${globals[k]!.short}`);
    const spec = name === undefined ? undefined : globals[name];
    if (spec === undefined || (spec.type !== 'string' && a.includes('='))) return i;
    const takesNext = spec.type === 'string' && !a.includes('=');
    if (takesNext && i + 1 >= argv.length) return i;
    i += takesNext ? 2 : 1;
  }
}

/**
 * Finds the command whose words are the longest prefix of argv after its leading global options;
 * `rest` is everything else (those options included), for the option parser.
 */
export function findCommand(commands: readonly CommandSpec[], argv: readonly string[]): { spec: CommandSpec; rest: string[] } | undefined {
  const skip = leadingGlobals(argv);
  let best: CommandSpec | undefined;
  for (const spec of commands) {
    if (spec.path.every((w, i) => argv[skip + i] === w) && (!best || spec.path.length > best.path.length)) best = spec;
  }
  return best ? { spec: best, rest: [...argv.slice(0, skip), ...argv.slice(skip + best.path.length)] } : undefined;
}

/** The words a command was given as, for help and errors: not the value of a leading --config. */
function commandWords(argv: readonly string[]): string[] {
  return argv.slice(leadingGlobals(argv)).filter((a) => !a.startsWith('-')).slice(0, 2);
}

/** The commands whose words begin with `words` (`faces` gives `faces list`, `faces add`, ...). */
function commandsUnder(commands: readonly CommandSpec[], words: readonly string[]): CommandSpec[] {
  return commands.filter((c) => c.path.length > words.length && words.every((w, i) => c.path[i] === w));
}

/** The help of a group of commands: `terminal-agent faces --help`, `terminal-agent help faces`. */
export function groupHelp(words: readonly string[], group: readonly CommandSpec[]): string {
  const name = words.join(' ');
  return [
    `usage: terminal-agent ${name} <command> [options]`,
    '',
    'commands:',
    ...commandRows(group),
    '',
    `run 'terminal-agent ${name} <command> --help' for a command's options`,
  ].join('\n');
}

/**
 * Why `words` is no command, with the nearest command when one is close (`facse list` gives
 * `faces list`, `faces lsit` gives `faces list`).
 */
function unknownCommandMessage(commands: readonly CommandSpec[], words: readonly string[]): string {
  const [first = '', second] = words;
  const firsts = [...new Set(commands.map((c) => c.path[0]!))];
  const group = firsts.includes(first) ? first : nearestWord(first, firsts);
  let guess: string | undefined;
  if (group !== undefined) {
    const seconds = commands.filter((c) => c.path[0] === group && c.path.length > 1).map((c) => c.path[1]!);
    if (second === undefined || seconds.length === 0) guess = group;
    else {
      const sub = seconds.includes(second) ? second : nearestWord(second, seconds);
      guess = sub === undefined ? (group !== first ? group : undefined) : `${group} ${sub}`;
    }
  }
  const what = firsts.includes(first) ? `unknown subcommand '${second}' of '${first}'` : `unknown command '${words.join(' ')}'`;
  if (guess !== undefined) return `${what}; did you mean '${guess}'? (terminal-agent ${guess.split(' ')[0]} --help)`;
  return `${what}; run 'terminal-agent --help' for the list`;
}

/** nearest() compares words as config keys (with _): a command's words have - instead. */
function nearestWord(word: string, candidates: readonly string[]): string | undefined {
  const found = nearest(word, candidates.map((c) => c.replace(/-/g, '_')));
  return found === undefined ? undefined : candidates.find((c) => c.replace(/-/g, '_') === found);
}

export function commandHelp(spec: CommandSpec): string {
  const lines = [`usage: terminal-agent ${spec.path.join(' ')}${spec.usage ? ` ${spec.usage}` : ''} [options]`, '', spec.summary];
  if (spec.description) lines.push('', spec.description.trim());
  const opts = { ...(spec.options ?? {}), ...GLOBAL_OPTIONS };
  lines.push('', 'options:');
  for (const [name, o] of Object.entries(opts)) {
    const flag = `${'short' in o && o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${('valueName' in o && o.valueName) || 'VALUE'}` : ''}`;
    lines.push(`  ${flag.padEnd(28)} ${o.description}`);
  }
  return lines.join('\n');
}

/** One line per command: its usage, then its summary, in a column. */
function commandRows(commands: readonly CommandSpec[]): string[] {
  const rows = commands.map((c) => [`${c.path.join(' ')}${c.usage ? ` ${c.usage}` : ''}`, c.summary] as const);
  const width = Math.min(60, Math.max(...rows.map((r) => r[0].length)));
  return rows.map(([u, s]) => `  ${u.padEnd(width)}  ${s}`);
}

export function overallHelp(commands: readonly CommandSpec[], version: string): string {
  return [
    `terminal-agent ${version}: keeps an edge terminal in step with its cloud service`,
    '',
    'usage: terminal-agent <command> [options]   (terminal-agent <command> --help for details)',
    '',
    'commands:',
    ...commandRows(commands),
    '',
    'global options: --config PATH, --json, --help, --version',
    'exit codes: 0 ok, 1 failure, 64 usage, 65 bad input, 69 service unavailable, 77 credentials refused, 78 configuration',
  ].join('\n');
}

function resolveGlobal(values: Record<string, unknown>, ctx: CliContext): GlobalArgs {
  const configPath = typeof values.config === 'string' ? values.config : ctx.env.TERMINAL_AGENT_CONFIG || DEFAULT_CONFIG_PATH;
  return { configPath, json: values.json === true };
}

/** Parses argv, runs the command, prints errors, returns the exit code. Never throws. */
export async function runCli(commands: readonly CommandSpec[], argv: readonly string[], ctx: CliContext): Promise<number> {
  const words = commandWords(argv);
  const askedHelp = argv.some((a) => a === '--help' || a === '-h');
  if (argv.length === 0 || (words.length === 0 && askedHelp)) {
    writeLine(ctx, overallHelp(commands, ctx.version));
    return argv.length === 0 ? ExitCode.usage : ExitCode.ok;
  }
  const first = argv[leadingGlobals(argv)];
  if (first === '--version' || first === '-v' || first === 'version') {
    writeLine(ctx, ctx.version);
    return ExitCode.ok;
  }
  if (first === 'help') return showHelp(commands, argv.slice(leadingGlobals(argv) + 1).filter((a) => !a.startsWith('-')), ctx);
  const found = findCommand(commands, argv);
  if (!found) {
    const group = commandsUnder(commands, words);
    if (words.length > 0 && group.length > 0) {
      // A group's word alone (`faces`, `faces --help`): its commands; without --help, a usage error.
      writeLine(ctx, groupHelp(words, group));
      return askedHelp ? ExitCode.ok : ExitCode.usage;
    }
    return unknownCommand(commands, words, argv.includes('--json'), ctx);
  }
  const { spec, rest } = found;
  let json = argv.includes('--json');
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: rest, options: { ...(spec.options ?? {}), ...GLOBAL_OPTIONS } as Record<string, OptionSpec>, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError(`${(err as Error).message.replace(/\. To specify.*$/s, '')}\n\n${commandHelp(spec)}`, { cause: err });
    }
    const values = parsed.values as ParsedArgs['values'];
    if (values.help) {
      writeLine(ctx, commandHelp(spec));
      return ExitCode.ok;
    }
    const { min, max } = spec.positionals ?? { min: 0, max: 0 };
    if (parsed.positionals.length < min || parsed.positionals.length > max) {
      const sub = commands.filter((c) => c.path.length > spec.path.length && spec.path.every((w, i) => c.path[i] === w));
      const hint = parsed.positionals.length > max && sub.length > 0
        ? `unknown subcommand '${parsed.positionals[0]}' of '${spec.path.join(' ')}'`
        : `'${spec.path.join(' ')}' takes ${min === max ? min : `${min} to ${max === Infinity ? 'any number of' : max}`} argument(s), got ${parsed.positionals.length}`;
      throw new UsageError(`${hint}\n\n${commandHelp(spec)}`);
    }
    const global = resolveGlobal(values, ctx);
    json = global.json;
    const code = await spec.run({ values, positionals: parsed.positionals, global }, ctx);
    return code ?? ExitCode.ok;
  } catch (err) {
    reportError(ctx, err, json);
    return exitCodeOf(err);
  }
}

/** `terminal-agent help [WORDS]`: the help of a command, of a group, or of them all. */
function showHelp(commands: readonly CommandSpec[], words: readonly string[], ctx: CliContext): number {
  const spec = commands.find((c) => c.path.length === words.length && c.path.every((w, i) => words[i] === w));
  const group = commandsUnder(commands, words);
  if (words.length === 0) writeLine(ctx, overallHelp(commands, ctx.version));
  else if (spec) writeLine(ctx, commandHelp(spec));
  else if (group.length > 0) writeLine(ctx, groupHelp(words, group));
  else return unknownCommand(commands, words, false, ctx);
  return ExitCode.ok;
}

function unknownCommand(commands: readonly CommandSpec[], words: readonly string[], json: boolean, ctx: CliContext): number {
  const message = words.length > 0 ? unknownCommandMessage(commands, words) : "no command given; run 'terminal-agent --help' for the list";
  if (json) writeJsonErr(ctx, new UsageError(message).toJSON());
  else writeErr(ctx, `terminal-agent: ${message}`);
  return ExitCode.usage;
}

export function reportError(ctx: CliContext, err: unknown, json: boolean): void {
  if (json) {
    const body = isAgentError(err) ? err.toJSON() : { error: String((err as Error)?.message ?? err), code: 'TA_ERR_FAILURE' };
    if (err instanceof ConfigError) body.problems = err.problems;
    writeJsonErr(ctx, body);
    return;
  }
  if (err instanceof ConfigError) {
    writeErr(ctx, `terminal-agent: ${err.problems.length} configuration problem(s):`);
    for (const p of err.problems) writeErr(ctx, `  ${formatProblem(p)}`);
    return;
  }
  if (isAgentError(err)) {
    writeErr(ctx, `terminal-agent: ${err.message} [${err.code}]`);
    return;
  }
  if (isProgramReplaced(err)) {
    // An upgrade under a running command: its message says what to do.
    writeErr(ctx, `terminal-agent: ${(err as Error).message}`);
    return;
  }
  // An unexpected bug: keep the stack, it is what a maintainer needs.
  writeErr(ctx, `terminal-agent: unexpected error: ${(err as Error)?.stack ?? String(err)}`);
}
