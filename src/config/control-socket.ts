import { dirname, resolve } from 'node:path';
import { scanPlainValue } from './plain-scan.js';
import { isRecord } from './plain-checks.js';
import { readPlainConfigSync } from './read-config-file.js';

// The control socket named by a config file, read without the schema (zod) or the secrets, for
// commands that only ask the running daemon (`status`): they must cost little more than the
// socket round trip. A plain config is scanned line by line (plain-scan.ts); anything else is
// parsed by the YAML library. Anything unusual there (unreadable file, YAML error, a socket
// that is not a string) gives undefined, and the caller loads the config in full, which reports
// the problem properly.

export const DEFAULT_CONTROL_SOCKET = '/run/terminal-agent/control.sock';

/** control.socket of a config made of plain `key: value` lines: a path, null (not set: the default), or undefined: ask the YAML parser. */
export function scanControlSocket(text: string): string | null | undefined {
  const scan = scanPlainValue(text, ['control', 'socket']);
  return scan === 'absent' ? null : scan?.value;
}

export async function controlSocketOf(configPath: string, cwd: string): Promise<string | undefined> {
  try {
    const file = resolve(cwd, configPath);
    // Blocking calls (read-config-file.ts): `status` has nothing else to do meanwhile. A file
    // that is not read the quick way is the full load's to read and report.
    const text = readPlainConfigSync(file);
    if (text === undefined) return undefined;
    let socket: unknown = scanControlSocket(text);
    if (socket === undefined) {
      const { parse } = await import('./yaml-plain.js');
      const raw: unknown = parse(text, { maxAliasCount: 100 });
      const control = isRecord(raw) ? raw.control : undefined;
      socket = control === undefined || control === null ? null : isRecord(control) ? control.socket ?? null : undefined;
    }
    if (socket === null) return DEFAULT_CONTROL_SOCKET;
    // Resolved as load-config.ts does: relative to the config file's folder.
    return typeof socket === 'string' && socket !== '' ? resolve(dirname(file), socket) : undefined;
  } catch {
    return undefined;
  }
}
