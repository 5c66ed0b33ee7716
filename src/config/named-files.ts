import { readFileSync } from 'node:fs';
import { ConfigError, describeError, type ConfigProblem } from '../errors.js';
import type { AgentConfig } from './schema.js';

// Files the config names and the daemon reads at start: service.ca_file (the client's trusted CA)
// and console.tls_cert_file / tls_key_file (the console's HTTPS). The schema sees only their
// paths; a file that is missing, unreadable or not what its key says stopped the daemon at start
// (exit 78) while `config check` said OK and `doctor` ended at the client. One reader per key
// serves the daemon and both commands, so all three say the same thing.

const PEM_CERT = '-----BEGIN CERTIFICATE-----';

/** service.ca_file's PEM text; a ConfigError naming the key when it cannot be read or holds no certificate. */
export function readCaFile(path: string): string {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([{ path: 'service.ca_file', message: `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}); give a readable PEM file or ""` }], { cause: err });
  }
  if (!pem.includes(PEM_CERT)) {
    throw new ConfigError([{ path: 'service.ca_file', message: `${path} holds no PEM certificate (${PEM_CERT})` }]);
  }
  return pem;
}

/** The console's certificate and key as read at start, or undefined without console.tls_cert_file. */
export function readConsoleTls(c: AgentConfig['console']): { cert: Buffer; key: Buffer } | undefined {
  if (!c.tls_cert_file) return undefined;
  const read = (path: string, key: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new ConfigError([{ path: `console.${key}`, file: path, message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? describeError(err)}): check the path and that the agent's user may read it` }]);
    }
  };
  return { cert: read(c.tls_cert_file, 'tls_cert_file'), key: read(c.tls_key_file, 'tls_key_file') };
}

/** What the console says of a certificate and key node's TLS refuses (a key of another certificate, not PEM). */
export function unusableConsoleTls(file: string, err: unknown): ConfigError {
  return new ConfigError([{ path: 'console.tls_cert_file', file, message: `the certificate or key is not usable: ${describeError(err)}` }]);
}

/**
 * Every problem the daemon would stop at with these files, as `config check` and `doctor` report
 * them. Read as the user running the command: the agent's own user may still be refused one.
 */
export async function namedFileProblems(config: AgentConfig): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  const collect = (check: () => void) => {
    try {
      check();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      // Where to fix it: the config file, unless the problem is the named file itself.
      problems.push(...err.problems.map((p) => (p.file || !config.file ? p : { ...p, file: config.file })));
    }
  };
  if (config.service.ca_file) collect(() => readCaFile(config.service.ca_file));
  let pair: ReturnType<typeof readConsoleTls>;
  collect(() => (pair = readConsoleTls(config.console)));
  if (pair) {
    // Loaded only here: the other commands that read the config have no use for node:tls.
    const { createSecureContext } = await import('node:tls');
    const { cert, key } = pair;
    collect(() => {
      try {
        createSecureContext({ cert, key });
      } catch (err) {
        throw unusableConsoleTls(config.console.tls_cert_file, err);
      }
    });
  }
  return problems;
}
