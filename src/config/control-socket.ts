import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

// The control socket named by a config file, read without the schema (zod) or the secrets, for
// commands that only ask the running daemon (`status`): they must cost little more than the
// socket round trip. A config written as plain `key: value` lines (as config.example.yaml is) is
// read line by line, without loading the YAML library; anything else in the lines that matter
// (flow style, anchors, tags, quoted keys, block scalars, a duplicate key) makes the scan give up
// and the YAML library parse it. Anything unusual there (unreadable file, YAML error, a socket
// that is not a string) gives undefined, and the caller loads the config in full, which reports
// the problem properly.

export const DEFAULT_CONTROL_SOCKET = '/run/terminal-agent/control.sock';

/** What the scan found: a socket path, none set (null: the default), or undefined: ask the YAML parser. */
type Scan = string | null | undefined;

const KEY_LINE = /^( *)([A-Za-z_][A-Za-z0-9_.-]*):(?:[ ]+(.*))?$/;
const COMMENT_OR_BLANK = /^ *(#.*)?$/;

/** A plain, single- or double-quoted (escape-free) scalar, without its trailing comment. */
function scalar(raw: string): Scan {
  const text = raw.trim();
  if (text === '' || text.startsWith('#')) return null;
  const single = /^'((?:[^']|'')*)'(?: +#.*)?$/.exec(text);
  if (single) return single[1]!.replaceAll("''", "'");
  const double = /^"([^"\\]*)"(?: +#.*)?$/.exec(text);
  if (double) return double[1]!;
  const plain = text.replace(/ +#.*$/, '');
  // Indicators, flow collections, `key: value` inside, and what YAML reads as null, a boolean or a number.
  if (/^[-?:,[\]{}#&*!|>'"%@`]/.test(plain) || plain.includes(': ') || plain.includes(' #')) return undefined;
  if (/^(~|null|true|false|yes|no|on|off)$/i.test(plain) || /^[-+]?(\.?\d|\.(inf|nan)$)/i.test(plain)) return /^(~|null)$/i.test(plain) ? null : undefined;
  return plain;
}

/** control.socket of a config made of plain `key: value` lines; undefined when it is not that simple. */
export function scanControlSocket(text: string): Scan {
  if (/[\t\r]/.test(text) || /^(---|\.\.\.|%)/m.test(text)) return undefined;
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  let inControl = false;
  let controlSeen = false;
  let childIndent = 0;
  let found: Scan = null;
  let socketSeen = false;
  let afterSocket = false;
  for (const line of lines) {
    if (COMMENT_OR_BLANK.test(line)) continue;
    // A flow collection may span lines and hold keys at any indentation: leave it to YAML.
    if (/[[\]{}]/.test(line.replace(/ #.*$/, ''))) return undefined;
    const m = KEY_LINE.exec(line);
    const indent = line.length - line.trimStart().length;
    if (indent === 0) {
      if (!m) return undefined; // a top-level line that is not `key:` (sequence, quoted key, flow...)
      inControl = m[2] === 'control';
      afterSocket = false;
      if (inControl) {
        if (controlSeen) return undefined; // a duplicate key: YAML reports it
        controlSeen = true;
        if (m[3] !== undefined && scalar(m[3]) !== null) return undefined; // `control: {...}` or a scalar
        childIndent = 0;
      }
      continue;
    }
    if (!inControl) continue;
    if (childIndent === 0) childIndent = indent;
    if (indent > childIndent) {
      if (afterSocket) return undefined; // a value continued on the next lines
      continue;
    }
    if (indent < childIndent || !m) return undefined;
    afterSocket = m[2] === 'socket';
    if (afterSocket) {
      if (socketSeen) return undefined;
      socketSeen = true;
      found = scalar(m[3] ?? '');
      if (found === undefined) return undefined;
    }
  }
  return found;
}

export async function controlSocketOf(configPath: string, cwd: string): Promise<string | undefined> {
  try {
    const file = resolve(cwd, configPath);
    const text = await readFile(file, 'utf8');
    let socket: unknown = scanControlSocket(text);
    if (socket === undefined) {
      const { parse } = await import('yaml');
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

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
