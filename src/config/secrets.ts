// Where the two secrets come from. Precedence, highest first (the first source that provides a
// value wins; lower ones are then not read):
//   1. environment: TERMINAL_AGENT_TERMINAL_SECRET / TERMINAL_AGENT_API_KEY (non-empty)
//   2. systemd credentials: $CREDENTIALS_DIRECTORY/terminal_secret and /api_key (LoadCredential=)
//   3. service.terminal_secret_file / service.api_key_file (relative to the config file's folder)
//   4. service.terminal_secret / service.api_key written inline
// Giving both the inline value and the *_file in the YAML is a problem (which one is meant?).
// One trailing line break is removed from files (`echo secret > file`). Messages name the source
// and the file, never the value.
import { readFile, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { isAbsolute, join, resolve } from 'node:path';
import { hasControlChar } from './plain-checks.js';
import type { AgentConfig } from './schema.js';

export type SecretName = 'terminal_secret' | 'api_key';
export type SecretSource = 'env' | 'credentials' | 'file' | 'inline' | 'none';

export interface SecretProblem {
  path: string;
  message: string;
  /** The secret file that could not be read, when the problem is about one outside the YAML. */
  file?: string;
}

export interface ResolvedSecret {
  value?: string;
  source: SecretSource;
  /** Where it came from, for the secret-free summary: a variable name or a file path. */
  origin?: string;
  /** True when a source existed but was unusable (already reported; do not also say "missing"). */
  failed: boolean;
}

const ENV_NAMES: Record<SecretName, string> = {
  terminal_secret: 'TERMINAL_AGENT_TERMINAL_SECRET',
  api_key: 'TERMINAL_AGENT_API_KEY',
};

export function secretEnvName(name: SecretName): string {
  return ENV_NAMES[name];
}

type ReadResult = { ok: true; value: string } | { ok: false; code: string };

async function readSecretFile(path: string, blocking: boolean): Promise<ReadResult> {
  try {
    // node:fs's callback: node:fs/promises would cost `config check` about 5 M instructions to load.
    const text = blocking ? readFileSync(path, 'utf8') : await promisify(readFile)(path, 'utf8');
    return { ok: true, value: text.replace(/\r?\n$/, '') };
  } catch (err) {
    return { ok: false, code: (err as NodeJS.ErrnoException).code ?? 'EIO' };
  }
}

function readFailure(name: SecretName, file: string, code: string, via: string): string {
  const what = name === 'terminal_secret' ? 'terminal secret' : 'API key';
  switch (code) {
    case 'ENOENT':
      return `${what} file ${file} (${via}) does not exist: create it (one line, mode 0600) or correct the path`;
    case 'EACCES':
    case 'EPERM':
      return `${what} file ${file} (${via}) is not readable by this user: fix its owner/mode (e.g. chmod 0640, group terminal-agent) or pass it with systemd LoadCredential=${name}:${file}`;
    case 'EISDIR':
      return `${what} file ${file} (${via}) is a directory: point to the file holding the secret`;
    default:
      return `${what} file ${file} (${via}) cannot be read (${code}): check the path and permissions`;
  }
}

function checkValue(name: SecretName, value: string, via: string): string | undefined {
  if (value.length === 0) return `${name} from ${via} is empty: put the secret in it`;
  if (hasControlChar(value)) {
    return `${name} from ${via} contains a line break or control character (only one trailing newline is removed): it cannot be sent in an HTTP header`;
  }
  return undefined;
}

/**
 * Resolves one secret. `service` is the raw YAML service mapping (or undefined); `baseDir` is the
 * folder relative *_file paths are taken from; `blocking`: files are read with blocking calls
 * (load-config.ts LoadConfigOptions.blocking).
 */
export async function resolveSecret(
  name: SecretName,
  service: Record<string, unknown> | undefined,
  env: Readonly<Record<string, string | undefined>>,
  baseDir: string,
  problems: SecretProblem[],
  blocking = false,
): Promise<ResolvedSecret> {
  const fileKey = `${name}_file`;
  const inline = service?.[name];
  const fileRaw = service?.[fileKey];
  if (inline !== undefined && fileRaw !== undefined) {
    problems.push({ path: `service.${fileKey}`, message: `both service.${name} and service.${fileKey} are set: keep only one (the file is preferred)` });
  }

  const accept = (value: string, source: SecretSource, origin: string, via: string, path: string, file?: string): ResolvedSecret => {
    const bad = checkValue(name, value, via);
    if (bad) {
      problems.push({ path, message: bad, ...(file ? { file } : {}) });
      return { source, origin, failed: true };
    }
    return { value, source, origin, failed: false };
  };

  const envName = ENV_NAMES[name];
  const fromEnv = env[envName];
  if (fromEnv) return accept(fromEnv, 'env', envName, `$${envName}`, `service.${name}`);

  const credDir = env.CREDENTIALS_DIRECTORY;
  if (credDir) {
    const credFile = join(credDir, name);
    const r = await readSecretFile(credFile, blocking);
    // An empty api_key credential means "none": the unit always loads both credentials (a missing
    // file fails the unit), and the package installs them empty, so a terminal that makes no
    // knowledge calls leaves this one empty. The terminal secret is required: empty stays a problem.
    const optionalAndEmpty = name === 'api_key' && r.ok && r.value.trim() === '';
    if (r.ok && !optionalAndEmpty) return accept(r.value, 'credentials', credFile, `systemd credential ${name}`, `service.${name}`, credFile);
    if (!r.ok && r.code !== 'ENOENT') {
      problems.push({ path: `service.${name}`, file: credFile, message: readFailure(name, credFile, r.code, `$CREDENTIALS_DIRECTORY`) });
      return { source: 'credentials', origin: credFile, failed: true };
    }
  }

  if (typeof fileRaw === 'string' && fileRaw.length > 0) {
    const file = isAbsolute(fileRaw) ? fileRaw : resolve(baseDir, fileRaw);
    const r = await readSecretFile(file, blocking);
    if (!r.ok) {
      problems.push({ path: `service.${fileKey}`, message: readFailure(name, file, r.code, `service.${fileKey}`) });
      return { source: 'file', origin: file, failed: true };
    }
    return accept(r.value, 'file', file, `file ${file}`, `service.${fileKey}`);
  }
  if (fileRaw !== undefined) return { source: 'none', failed: true }; // wrong type: the schema reports it

  if (typeof inline === 'string') return { value: inline, source: 'inline', origin: `service.${name}`, failed: false };
  // Not a string (a number, a list): the schema reports the type at its line.
  return { source: 'none', failed: inline !== undefined };
}

/** The secret values of a resolved config, for the logger's scrubber. */
export function configSecrets(cfg: AgentConfig): string[] {
  return [cfg.service.terminal_secret, cfg.service.api_key].filter((s): s is string => typeof s === 'string' && s.length > 0);
}

/**
 * configSecrets of the config `current()` returns, made once per config: every log line and
 * event asks for it. A reload sets a new config object (configs are never changed in place).
 */
export function secretsOfCurrent(current: () => AgentConfig): () => readonly string[] {
  let memo: { config: AgentConfig; list: readonly string[] } | undefined;
  return () => {
    const config = current();
    if (memo?.config !== config) memo = { config, list: configSecrets(config) };
    return memo.list;
  };
}
