import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';

// The control socket named by a config file, read without the schema (zod) or the secrets, for
// commands that only ask the running daemon (`status`): they must cost little more than the
// socket round trip. Anything unusual (unreadable file, YAML error, a socket that is not a string)
// gives undefined, and the caller loads the config in full, which reports the problem properly.

export const DEFAULT_CONTROL_SOCKET = '/run/terminal-agent/control.sock';

export async function controlSocketOf(configPath: string, cwd: string): Promise<string | undefined> {
  try {
    const file = resolve(cwd, configPath);
    const raw: unknown = parse(await readFile(file, 'utf8'), { maxAliasCount: 100 });
    const control = isRecord(raw) ? raw.control : undefined;
    if (control === undefined || control === null) return DEFAULT_CONTROL_SOCKET;
    const socket = isRecord(control) ? control.socket : undefined;
    if (socket === undefined || socket === null) return DEFAULT_CONTROL_SOCKET;
    // Resolved as load-config.ts does: relative to the config file's folder.
    return typeof socket === 'string' && socket !== '' ? resolve(dirname(file), socket) : undefined;
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
