import { parseArgs } from 'node:util';
import type { OptionSpec } from './command.js';

// A command's arguments, as node:util parseArgs reads them in strict mode with positionals
// allowed. The usual forms (`--name value`, `--name=value`, `--flag`, `-h`, positionals) are read
// here; anything else (an unknown option, a missing or dash-led value, `--`, `-abc` groups) goes to
// parseArgs itself, so the result and every error message stay exactly node's. Why: loading and
// running parseArgs costs every command about 1 ms, on a Pi several.
// test/cli/parse-argv.test.ts holds the two side by side.

export interface ParsedArgv {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parseArgv(args: readonly string[], options: Readonly<Record<string, OptionSpec>>): ParsedArgv {
  return readUsualForms(args, options) ?? (parseArgs({ args: [...args], options, allowPositionals: true, strict: true }) as ParsedArgv);
}

/** The parse of `args`, or undefined when one of them is not a usual form. */
function readUsualForms(args: readonly string[], options: Readonly<Record<string, OptionSpec>>): ParsedArgv | undefined {
  const values: ParsedArgv['values'] = Object.create(null) as ParsedArgv['values'];
  const positionals: string[] = [];
  const optionOf = (name: string) => (Object.hasOwn(options, name) ? options[name] : undefined);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.length < 2 || arg[0] !== '-') {
      positionals.push(arg);
      continue;
    }
    let name: string | undefined;
    let inline: string | undefined;
    if (arg[1] === '-') {
      const eq = arg.indexOf('=');
      name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (eq >= 0) inline = arg.slice(eq + 1);
    } else if (arg.length === 2) {
      name = Object.keys(options).find((n) => options[n]!.short === arg[1]);
    }
    const spec = name ? optionOf(name) : undefined;
    if (!name || !spec || name === '__proto__') return undefined;
    let value: string | true;
    if (spec.type === 'boolean') {
      if (inline !== undefined) return undefined;
      value = true;
    } else if (inline !== undefined) {
      value = inline;
    } else {
      const next = args[i + 1];
      // A missing value, or one that looks like an option, is parseArgs's error to word.
      if (next === undefined || (next.length > 1 && next[0] === '-')) return undefined;
      value = next;
      i++;
    }
    if (spec.multiple) {
      const list = values[name];
      if (Array.isArray(list)) list.push(value as string);
      else values[name] = [value as string];
    } else values[name] = value;
  }
  return { values, positionals };
}
