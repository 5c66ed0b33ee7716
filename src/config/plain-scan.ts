// One value of a config file read without the YAML library or the schema, for commands that need
// a single setting (`status`: control.socket, `faces list --cached`: state_dir) and must cost
// little more than a bare node. A config written as plain `key: value` lines (as
// config.example.yaml is) is read line by line; anything else in the lines that matter (flow
// style, anchors, tags, quoted keys, block scalars, a duplicate key, a value continued on the next
// line) makes the scan give up (undefined), and the caller asks the YAML library or loads the
// config in full, which reports the problem properly.

/** What the scan found: the key's value (null for `~`, `null` or nothing), 'absent', or undefined: not that simple. */
export type PlainScan = { value: string | null } | 'absent' | undefined;

// The lines are read with string methods, not regular expressions: V8 compiles each regular
// expression on its first use and again to machine code on its second, which cost `status` about
// 1 M instructions (a tenth of what it spends above a bare node's socket round trip). The text
// holds no line terminator but \n by then (see scanPlainValue), so `.` of the expressions they
// replace (in the comments) would have matched any character.

/** `^ *(#.*)?$`: blank, or a comment. */
function commentOrBlank(line: string): boolean {
  let i = 0;
  while (line.charCodeAt(i) === 0x20) i++;
  return i === line.length || line.charCodeAt(i) === 0x23;
}

/** `^( *)([A-Za-z_][A-Za-z0-9_.-]*):(?:[ ]+(.*))?$`: [key, the value after `: ` (undefined: nothing after the colon)], or null. */
function keyLine(line: string): [string, string | undefined] | null {
  let i = 0;
  while (line.charCodeAt(i) === 0x20) i++;
  const start = i;
  if (!nameChar(line.charCodeAt(i), true)) return null;
  i++;
  while (nameChar(line.charCodeAt(i), false)) i++;
  if (line.charCodeAt(i) !== 0x3a) return null;
  const key = line.slice(start, i++);
  if (i === line.length) return [key, undefined];
  if (line.charCodeAt(i) !== 0x20) return null;
  while (line.charCodeAt(i) === 0x20) i++;
  return [key, line.slice(i)];
}

/** [A-Za-z_] (first) or [A-Za-z0-9_.-]. */
function nameChar(c: number, first: boolean): boolean {
  if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f) return true;
  return !first && ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d);
}

/** `/[[\]{}]/.test(line.replace(/ #.*$/, ''))`: a flow collection's bracket before any comment. */
function hasFlowBracket(line: string): boolean {
  const comment = line.indexOf(' #');
  const body = comment < 0 ? line : line.slice(0, comment);
  return body.includes('[') || body.includes(']') || body.includes('{') || body.includes('}');
}

/** An absolute path of the usual characters (/[A-Za-z0-9_./-]/), which YAML reads as that string: no expression to run. */
function plainPath(text: string): boolean {
  if (text.charCodeAt(0) !== 0x2f) return false;
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!nameChar(c, false) && c !== 0x2f) return false;
  }
  return true;
}

/** A plain, single- or double-quoted (escape-free) scalar, without its trailing comment; undefined: ask YAML. */
function scalar(raw: string): string | null | undefined {
  const text = raw.trim();
  if (text === '' || text.startsWith('#')) return null;
  if (plainPath(text)) return text;
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
  // Tabs, and line terminators other than \n (which YAML and `.` know and a line split does not).
  if (text.includes('\t') || text.includes('\r') || text.includes('\u2028') || text.includes('\u2029')) return undefined;
  // /^(---|\.\.\.|%)/m: a document marker or a directive at the start of a line.
  for (const mark of ['---', '...', '%']) if (text.startsWith(mark) || text.includes(`\n${mark}`)) return undefined;
  const [first, second] = path;
  const lines = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split('\n');
  const topSeen = new Set<string>();
  let inSection = false;
  let childIndent = 0;
  let found: PlainScan = 'absent';
  let afterKey = false;
  for (const line of lines) {
    if (commentOrBlank(line)) continue;
    // A flow collection may span lines and hold keys at any indentation: leave it to YAML.
    if (hasFlowBracket(line)) return undefined;
    const indent = line.length - line.trimStart().length;
    // Only a top-level line and a line of the section looked for are read as `key: value`.
    const m = indent === 0 || inSection ? keyLine(line) : null;
    if (indent === 0) {
      if (!m) return undefined; // a top-level line that is not `key:` (sequence, quoted key, flow...)
      const name = m[0];
      if (topSeen.has(name) || (opts.topKeys && !opts.topKeys.includes(name))) return undefined;
      topSeen.add(name);
      inSection = false;
      afterKey = false;
      if (name !== first) continue;
      if (second === undefined) {
        const value = scalar(m[1] ?? '');
        if (value === undefined) return undefined;
        found = { value };
        afterKey = true;
        continue;
      }
      inSection = true;
      if (m[1] !== undefined && scalar(m[1]) !== null) return undefined; // `control: {...}` or a scalar
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
    afterKey = m[0] === second;
    if (afterKey) {
      if (found !== 'absent') return undefined;
      const value = scalar(m[1] ?? '');
      if (value === undefined) return undefined;
      found = { value };
    }
  }
  return found;
}
