import type { Readable, Writable } from 'node:stream';

// The CLI's building blocks. A command is a plain object: its words, its options (node:util
// parseArgs syntax) and a `run` that gets everything from the context, so tests can run commands
// in-process with their own streams and environment, and only src/main.ts touches process.*.

export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
}

export interface CliContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
  io: CliIo;
  version: string;
  /** Aborted on the first SIGTERM/SIGINT; long-running commands (run, emulator, demo) stop on it. */
  shutdown: AbortSignal;
  /** Subscribes to SIGHUP; returns the unsubscribe function. */
  onReload(listener: () => void): () => void;
  /**
   * Subscribes to the last words of a process about to exit on an uncaught error (a bug), so the
   * daemon can log it as a JSON line before systemd restarts it; returns the unsubscribe function.
   */
  onFatal(listener: (err: unknown, origin: string) => void): () => void;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** One line for --help; name the value in the form `--top N`. */
  description: string;
  /** Shown in --help as the value's placeholder, e.g. N, FILE. */
  valueName?: string;
}

export interface GlobalArgs {
  /** --config, else $TERMINAL_AGENT_CONFIG, else /etc/terminal-agent/config.yaml. */
  configPath: string;
  json: boolean;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  global: GlobalArgs;
}

export interface CommandSpec {
  /** The command's words, e.g. ['faces', 'add']. */
  path: string[];
  /** One line for the command list. */
  summary: string;
  /** Positional part of the usage line, e.g. '--name N IMAGE'. */
  usage?: string;
  /** Longer help text, shown by --help. */
  description?: string;
  options?: Record<string, OptionSpec>;
  positionals?: { min: number; max: number; names?: string[] };
  /** Returns the exit code (0 when omitted). Throws AgentError subclasses on failure. */
  run(args: ParsedArgs, ctx: CliContext): Promise<number | void>;
}

export function stringOpt(args: ParsedArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function boolOpt(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

export function listOpt(args: ParsedArgs, name: string): string[] {
  const v = args.values[name];
  if (Array.isArray(v)) return v;
  return typeof v === 'string' ? [v] : [];
}

/** Standard input, whole; `tooLarge` is thrown once more than `max` bytes came. */
export async function readStdin(ctx: CliContext, max: number, tooLarge: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.io.stdin) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > max) throw tooLarge();
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}
