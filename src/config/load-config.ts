// Reads the YAML config, resolves secrets, validates everything through the schema and reports
// EVERY problem at once as a ConfigError whose problems carry file, line, key path and the fix.
// `env` is passed in (only src/main.ts reads process.env).
import { readFile, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { LineCounter, parseDocument, visit, type Document } from 'yaml';
import { config as zodConfig, type z } from 'zod/mini';
import zodEnglish from 'zod/v4/locales/en.js';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { unknownKeyMessage } from './did-you-mean.js';
import { configSchema, type AgentConfig } from './schema.js';
import { resolveSecret, secretEnvName, type ResolvedSecret, type SecretName, type SecretProblem } from './secrets.js';
import { keyLine, valueLine } from './yaml-locate.js';
import { readConfigFile, readConfigFileSync } from './read-config-file.js';
import { parseConsoleListen } from './listen-address.js';
import { isRecord } from './plain-checks.js';

export interface LoadConfigOptions {
  /** The YAML file; a relative path is taken from `cwd` (default: the process's working dir). */
  path: string;
  env: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /**
   * False for commands that only need local settings (socket, state_dir): `status`, `faces list
   * --cached`, `say` through the daemon. On a terminal the secrets usually reach only the service
   * (systemd LoadCredential=), and an operator must still be able to ask the daemon how it is.
   * A secret that cannot be found or read is then left unset instead of being a problem; a call
   * that needs it fails later with a ConfigError naming the key. Default true.
   */
  requireSecrets?: boolean;
  /**
   * True for CLI commands: the file and the secrets are read with blocking calls. They wait for
   * them anyway, and the first call through libuv's thread pool starts its threads (about 2.5 ms
   * of a 40 ms `config check` here). False for the daemon, whose SIGHUP reload must not hold the
   * event loop on a slow disk. The config file is opened O_NONBLOCK either way (a FIFO is refused,
   * not waited on).
   */
  blocking?: boolean;
}

export interface LoadedConfig {
  config: AgentConfig;
  /** Where each secret came from (no values), for `config check` and `doctor`. */
  secrets: Record<SecretName, Pick<ResolvedSecret, 'source' | 'origin'>>;
}

export async function loadConfig(opts: LoadConfigOptions): Promise<AgentConfig> {
  return (await loadConfigDetailed(opts)).config;
}

export { configSecrets } from './secrets.js';

export async function loadConfigDetailed(opts: LoadConfigOptions): Promise<LoadedConfig> {
  const file = opts.cwd === undefined ? resolve(opts.path) : resolve(opts.cwd, opts.path);
  const blocking = opts.blocking ?? false;
  const text = blocking ? readConfigFileSync(file) : await readConfigFile(file);

  const counter = new LineCounter();
  const { doc, raw } = parseYaml(text, file, counter);
  const problems: ConfigProblem[] = [];
  const at = (path: string) => ({ file, line: valueLine(doc, counter, path ? path.split('.') : []) });

  // Secrets are resolved before validation so the schema checks the value that will be used.
  const service = isRecord(raw) && isRecord(raw.service) ? raw.service : undefined;
  const secretProblems: SecretProblem[] = [];
  const baseDir = dirname(file);
  const terminal = await resolveSecret('terminal_secret', service, opts.env, baseDir, secretProblems, blocking);
  const apiKey = await resolveSecret('api_key', service, opts.env, baseDir, secretProblems, blocking);
  const requireSecrets = opts.requireSecrets ?? true;
  for (const p of requireSecrets ? secretProblems : []) {
    problems.push(p.file ? { path: p.path, message: p.message, file: p.file } : { path: p.path, message: p.message, ...at(p.path) });
  }
  if (service) {
    for (const [name, r] of [['terminal_secret', terminal], ['api_key', apiKey]] as const) {
      if (r.source === 'env' || r.source === 'credentials' || r.source === 'file') {
        if (r.value !== undefined) service[name] = r.value;
        else delete service[name]; // unusable, already reported
      }
    }
  }

  // jitless: zod would compile a fast path for each object schema with `new Function` (code no
  // cache keeps), and a config is parsed once per start or reload: interpreting it is cheaper.
  // zod/mini has no locale of its own: English for any issue a field's own message does not cover.
  zodConfig(zodEnglish());
  const parsed = configSchema.safeParse(raw, { jitless: true });
  if (!parsed.success) problems.push(...issuesToProblems(parsed.error.issues, doc, counter, file));

  if (requireSecrets && terminal.value === undefined && !terminal.failed) {
    problems.push({
      path: 'service.terminal_secret',
      message: `no terminal secret: set service.terminal_secret_file (a file holding it), or LoadCredential=terminal_secret:PATH in the systemd unit, or $${secretEnvName('terminal_secret')}`,
      ...at('service.terminal_secret'),
    });
  }

  let consoleCredential: string | null = null;
  if (parsed.success && requireSecrets && parsed.data.console.listen.trim() !== '') {
    const credential = await consolePasswordCredential(opts.env, blocking);
    // A credential that is there but unusable is the problem to fix; "needs a login" would mislead.
    if (typeof credential === 'object' && credential !== null) problems.push(credential);
    else {
      consoleCredential = credential;
      const p = consoleLoginProblem(parsed.data.console, consoleCredential);
      if (p) problems.push({ path: 'console.listen', message: p, ...at('console.listen') });
    }
  }

  if (!parsed.success || problems.length > 0) throw new ConfigError(sortProblems(problems));

  const config: AgentConfig = { ...parsed.data, file };
  config.console.password_credential = consoleCredential;
  resolvePaths(config, baseDir);
  return {
    config,
    secrets: {
      terminal_secret: { source: terminal.source, origin: terminal.origin },
      api_key: { source: apiKey.source, origin: apiKey.origin },
    },
  };
}

/**
 * $CREDENTIALS_DIRECTORY/console_password when systemd passed one (LoadCredential=console_password:PATH),
 * null when it did not. Read here, not only when the console starts, so that `config check` and
 * `doctor` (run with CREDENTIALS_DIRECTORY, as README says) report an empty or unreadable one that
 * would stop the daemon at its start.
 */
async function consolePasswordCredential(env: LoadConfigOptions['env'], blocking: boolean): Promise<string | null | ConfigProblem> {
  const dir = env.CREDENTIALS_DIRECTORY;
  if (!dir) return null;
  const path = join(dir, 'console_password');
  let text: string;
  try {
    text = blocking ? readFileSync(path, 'utf8') : await promisify(readFile)(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code === 'ENOENT') return null;
    return { path: 'console.password_hash', file: path, message: `the console_password credential ${path} cannot be read (${code}): check LoadCredential=console_password:PATH in the unit, or the file's owner and mode` };
  }
  if (text.replace(/\r?\n$/, '') === '') {
    return { path: 'console.password_hash', file: path, message: `the console_password credential ${path} is empty: put the console password (or a hash from 'terminal-agent console hash-password') in it, or remove LoadCredential=console_password` };
  }
  return path;
}

/** The web console beyond loopback with nobody to log in as: refused, the page would be open to the network. */
function consoleLoginProblem(c: AgentConfig['console'], credential: string | null): string | undefined {
  if (c.listen.trim() === '') return undefined;
  const addr = parseConsoleListen(c.listen);
  if (typeof addr === 'string' || addr.loopback) return undefined;
  if (c.password_hash !== '' || credential !== null) return undefined;
  return `${c.listen} lets other machines reach the web console, which then needs a login: set console.password_hash (from 'terminal-agent console hash-password'), or pass the password as a systemd credential (LoadCredential=console_password:PATH), or listen on 127.0.0.1 only`;
}

/** Syntax problems reported at most; the rest are one line (a garbage file gives thousands). */
const MAX_SYNTAX_PROBLEMS = 10;
/** Aliases expanded at most: a config needs none, a "billion laughs" file needs 10^9. */
const MAX_ALIAS_COUNT = 100;

/**
 * The YAML parsed into a document and a plain value, with every way that can fail (syntax,
 * duplicate keys, nesting deep enough to exhaust the stack, an alias bomb) as a ConfigError with
 * the file and line: never an "unexpected error".
 */
function parseYaml(text: string, file: string, counter: LineCounter): { doc: Document; raw: unknown } {
  let doc: Document;
  try {
    doc = parseDocument(text, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  } catch (err) {
    throw new ConfigError([{ path: '', file, message: yamlFailure(err) }], { cause: err });
  }
  if (doc.errors.length > 0) {
    // Validating a half-parsed document only adds noise: report the syntax first.
    const seen = new Set<string>();
    const problems: ConfigProblem[] = [];
    for (const e of doc.errors) {
      // An unclosed quote is detected at the end of the file: point at the last written line instead.
      const line = counter.linePos(Math.min(e.pos[0], Math.max(0, text.trimEnd().length - 1))).line;
      const deep = /call stack/i.test(e.message);
      const message = deep
        ? 'YAML nested too deeply (thousands of levels; a config has at most 4): this is not a configuration file'
        : /keys must be unique/i.test(e.message)
          ? 'duplicate key: this key is already set above in the same section; keep one of the two'
          : `YAML syntax error: ${e.message.replace(/\s+at line \d+, column \d+:?[\s\S]*$/, '')} (check indentation, a missing ':' or an unclosed quote)`;
      if (seen.has(`${line}:${message}`)) continue;
      seen.add(`${line}:${message}`);
      problems.push({ path: '', file, line, message });
    }
    if (problems.length > MAX_SYNTAX_PROBLEMS) {
      const more = problems.length - MAX_SYNTAX_PROBLEMS;
      problems.splice(MAX_SYNTAX_PROBLEMS, more, { path: '', file, message: `... and ${more} more YAML syntax errors` });
    }
    throw new ConfigError(problems);
  }
  try {
    return { doc, raw: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {} };
  } catch (err) {
    throw new ConfigError([{ path: '', file, line: firstAliasLine(doc, counter), message: yamlFailure(err) }], { cause: err });
  }
}

function yamlFailure(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  if (/alias/i.test(msg)) {
    return `YAML aliases (*name) expand to too much data (over ${MAX_ALIAS_COUNT} expansions; a "billion laughs" file): a config needs no aliases, write the values out`;
  }
  if (err instanceof RangeError || /call stack/i.test(msg)) return 'YAML nested too deeply: this is not a configuration file';
  return `YAML cannot be read: ${msg}`;
}

function firstAliasLine(doc: Document, counter: LineCounter): number | undefined {
  let line: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      if (node.range) line = counter.linePos(node.range[0]).line;
      return visit.BREAK;
    },
  });
  return line;
}

/** Relative paths in the file are relative to the file's folder, not to wherever the CLI ran. */
function resolvePaths(config: AgentConfig, baseDir: string): void {
  config.state_dir = resolve(baseDir, config.state_dir);
  config.enroll.dir = resolve(baseDir, config.enroll.dir);
  config.control.socket = resolve(baseDir, config.control.socket);
  if (config.service.ca_file) config.service.ca_file = resolve(baseDir, config.service.ca_file);
  if (config.console.tls_cert_file) config.console.tls_cert_file = resolve(baseDir, config.console.tls_cert_file);
  if (config.console.tls_key_file) config.console.tls_key_file = resolve(baseDir, config.console.tls_key_file);
}

function issuesToProblems(issues: readonly z.core.$ZodIssue[], doc: Document, counter: LineCounter, file: string): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const iss of issues) {
    const segs = iss.path.map((s) => (typeof s === 'symbol' ? String(s.description) : s));
    const dotted = segs.join('.');
    if (iss.code === 'unrecognized_keys') {
      for (const key of iss.keys) {
        out.push({
          path: dotted ? `${dotted}.${key}` : key,
          file,
          line: keyLine(doc, counter, segs, key),
          message: unknownKeyMessage(dotted, key),
        });
      }
      continue;
    }
    out.push({ path: dotted, file, line: valueLine(doc, counter, segs), message: iss.message });
  }
  return out;
}

function sortProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return problems
    .map((p, i) => ({ p, i }))
    .sort((a, b) => (a.p.line ?? 0) - (b.p.line ?? 0) || a.i - b.i)
    .map(({ p }) => p);
}
