// One value of a config file read without the YAML library or the schema, for commands that need
// a single setting (`status`: control.socket, `faces list --cached`: state_dir) and must cost
// little more than a bare node. A config written as plain `key: value` lines (as
// config.example.yaml is) is read line by line; anything else in the lines that matter (flow
// style, anchors, tags, quoted keys, block scalars, a duplicate key, a value continued on the next
// line) makes the scan give up (undefined), and the caller asks the YAML library or loads the
// config in full, which reports the problem properly.

/** What the scan found: the key's value (null for `~`, `null` or nothing), 'absent', or undefined: not that simple. */
export type PlainScan = { value: string | null } | 'absent' | undefined;

const KEY_LINE = /^( *)([A-Za-z_][A-Za-z0-9_.-]*):(?:[ ]+(.*))?$/;
const COMMENT_OR_BLANK = /^ *(#.*)?$/;

/** A plain, single- or double-quoted (escape-free) scalar, without its trailing comment; undefined: ask YAML. */
function scalar(raw: string): string | null | undefined {
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

export interface PlainScanOptions {
  /** Top-level keys the file may hold: any other (a misspelt section) makes the scan give up. */
  topKeys?: readonly string[];
}

/**
 * The value at `path` (a top-level key, or a section and its key) of a config made of plain
 * `key: value` lines; undefined when the file is not that simple.
 */
export function scanPlainValue(text: string, path: readonly [string] | readonly [string, string], opts: PlainScanOptions = {}): PlainScan {
  if (/[\t\r]/.test(text) || /^(---|\.\.\.|%)/m.test(text)) return undefined;
  const [first, second] = path;
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  const topSeen = new Set<string>();
  let inSection = false;
  let childIndent = 0;
  let found: PlainScan = 'absent';
  let afterKey = false;
  for (const line of lines) {
    if (COMMENT_OR_BLANK.test(line)) continue;
    // A flow collection may span lines and hold keys at any indentation: leave it to YAML.
    if (/[[\]{}]/.test(line.replace(/ #.*$/, ''))) return undefined;
    const m = KEY_LINE.exec(line);
    const indent = line.length - line.trimStart().length;
    if (indent === 0) {
      if (!m) return undefined; // a top-level line that is not `key:` (sequence, quoted key, flow...)
      const name = m[2]!;
      if (topSeen.has(name) || (opts.topKeys && !opts.topKeys.includes(name))) return undefined;
      topSeen.add(name);
      inSection = false;
      afterKey = false;
      if (name !== first) continue;
      if (second === undefined) {
        const value = scalar(m[3] ?? '');
        if (value === undefined) return undefined;
        found = { value };
        afterKey = true;
        continue;
      }
      inSection = true;
      if (m[3] !== undefined && scalar(m[3]) !== null) return undefined; // `control: {...}` or a scalar
      childIndent = 0;
      continue;
    }
    if (afterKey && second === undefined) return undefined; // a value continued, or a mapping under a scalar key
    if (!inSection) continue;
    if (childIndent === 0) childIndent = indent;
    if (indent > childIndent) {
      if (afterKey) return undefined; // a value continued on the next lines
      continue;
    }
    if (indent < childIndent || !m) return undefined;
    afterKey = m[2] === second;
    if (afterKey) {
      if (found !== 'absent') return undefined;
      const value = scalar(m[3] ?? '');
      if (value === undefined) return undefined;
      found = { value };
    }
  }
  return found;
}
