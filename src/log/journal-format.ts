// The systemd journal's native protocol (systemd.io/JOURNAL_NATIVE_PROTOCOL): one datagram per
// entry, `KEY=value\n` per field, or for a value with a newline `KEY\n` + its length as 64-bit
// little-endian + the bytes + `\n`. Fields are what `journalctl FIELD=value` filters on.

/** pino's numeric levels to syslog priorities (journalctl -p). */
export function priorityOf(level: unknown): number {
  const n = typeof level === 'number' ? level : LEVEL_NUMBERS[String(level)] ?? 30;
  if (n >= 60) return 2; // fatal -> crit
  if (n >= 50) return 3; // error -> err
  if (n >= 40) return 4; // warn -> warning
  if (n >= 30) return 6; // info -> info
  return 7; // debug, trace
}

const LEVEL_NUMBERS: Record<string, number> = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10 };

/** Keys of a pino line that the journal has already, or that say nothing per entry. */
const SKIPPED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);
/** Keys renamed so that the same fact has one field name whichever component logged it. */
const RENAMED: Record<string, string> = { err_code: 'CODE', code: 'CODE', err: 'ERR', error: 'ERR', component: 'COMPONENT', file: 'FILE', face_id: 'FACE_ID' };

/** A journal field name: upper case letters, digits and `_`, not starting with `_` or a digit, at most 64. */
export function fieldName(key: string): string {
  const renamed = RENAMED[key];
  if (renamed) return renamed;
  let name = key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase().replace(/[^A-Z0-9_]/g, '_').replace(/^[_0-9]+/, '');
  if (!name) name = 'FIELD';
  return name.slice(0, 64);
}

const MAX_VALUE_BYTES = 16 * 1024;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function errorParts(value: unknown): { message: string; stack?: string; code?: string } {
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return {
      message: text(o.message ?? o.type ?? JSON.stringify(o)),
      ...(typeof o.stack === 'string' ? { stack: o.stack } : {}),
      ...(typeof o.code === 'string' ? { code: o.code } : {}),
    };
  }
  return { message: text(value) };
}

/**
 * The journal fields of one pino JSON record. MESSAGE is the log's sentence, with the error it
 * reports appended when the sentence does not already say it; every other key becomes its own
 * field (objects as JSON). The record was scrubbed of secrets before it got here.
 */
export function journalFields(record: Record<string, unknown>, identifier = 'terminal-agent'): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const msg = text(record.msg);
  const errValue = record.err ?? record.error;
  const err = errValue !== undefined ? errorParts(errValue) : undefined;
  const message = err && err.message && !msg.includes(err.message) ? (msg ? `${msg}: ${err.message}` : err.message) : msg;
  out.push(['MESSAGE', message || '(no message)']);
  out.push(['PRIORITY', String(priorityOf(record.level))]);
  out.push(['SYSLOG_IDENTIFIER', identifier]);
  const seen = new Set(['MESSAGE', 'PRIORITY', 'SYSLOG_IDENTIFIER']);
  const add = (name: string, value: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    out.push([name, value]);
  };
  if (err) {
    add('ERR', err.message);
    if (err.stack) add('ERR_STACK', err.stack);
    if (err.code) add('CODE', err.code);
  }
  for (const [key, value] of Object.entries(record)) {
    if (SKIPPED.has(key) || key === 'err' || key === 'error' || value === undefined) continue;
    add(fieldName(key), text(value));
  }
  // pino's level label, for tools that read the JSON form's `level`.
  add('LEVEL', typeof record.level === 'string' ? record.level : String(record.level));
  return out;
}

/** One datagram of the native protocol. Values are cut at 16 KiB (a datagram has limits). */
export function encodeJournalEntry(fields: Array<[string, string]>): Buffer {
  // Most entries are short one-line values: one string, encoded once (three Buffers per field
  // and a concat were most of the 13 µs an entry took).
  let text = '';
  for (const [name, value] of fields) {
    // 3 bytes a UTF-16 unit at most: a value this short cannot reach the cut.
    if (value.length * 3 > MAX_VALUE_BYTES || value.includes('\n')) return encodeFieldByField(fields);
    text += `${name}=${value}\n`;
  }
  return Buffer.from(text, 'utf8');
}

function encodeFieldByField(fields: Array<[string, string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, raw] of fields) {
    let value = Buffer.from(raw, 'utf8');
    if (value.length > MAX_VALUE_BYTES) value = Buffer.concat([value.subarray(0, MAX_VALUE_BYTES), Buffer.from('...[cut]')]);
    if (value.includes(0x0a)) {
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(value.length));
      parts.push(Buffer.from(`${name}\n`), len, value, Buffer.from('\n'));
    } else {
      parts.push(Buffer.from(`${name}=`), value, Buffer.from('\n'));
    }
  }
  return Buffer.concat(parts);
}

/** The reverse, for tests and for a reader that wants to check what was sent. */
export function decodeJournalEntry(buf: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < buf.length) {
    const nl = buf.indexOf(0x0a, i);
    const end = nl < 0 ? buf.length : nl;
    const line = buf.subarray(i, end).toString('utf8');
    const eq = line.indexOf('=');
    if (eq >= 0) {
      out[line.slice(0, eq)] = line.slice(eq + 1);
      i = end + 1;
    } else {
      const len = Number(buf.readBigUInt64LE(end + 1));
      out[line] = buf.subarray(end + 9, end + 9 + len).toString('utf8');
      i = end + 9 + len + 1;
    }
  }
  return out;
}

/** The `<N>`-prefixed line for journald's stdout stream when the socket cannot be used. */
export function syslogPrefixedLine(fields: Array<[string, string]>): string {
  const get = (k: string) => fields.find(([n]) => n === k)?.[1];
  const rest = fields.filter(([n]) => !['MESSAGE', 'PRIORITY', 'SYSLOG_IDENTIFIER', 'LEVEL', 'ERR_STACK'].includes(n));
  const tail = rest.map(([n, v]) => `${n}=${/[\s"]/.test(v) ? JSON.stringify(v) : v}`).join(' ');
  return `<${get('PRIORITY') ?? 6}>${(get('MESSAGE') ?? '').replace(/\n/g, ' ')}${tail ? ` ${tail}` : ''}\n`;
}
