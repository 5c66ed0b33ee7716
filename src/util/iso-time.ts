// Timestamps for logs, events, API answers and HTTP headers, written from the UTC fields.
//
// Why not Date's toISOString/toUTCString/toJSON: in Node 20's V8 every one of them also looks up
// the local time zone's display name (ToDateString asks ICU for it whatever the format), and that
// first lookup maps ICU's time zone name tables and code into the process for good: about 0.85 MB
// of the daemon's idle RSS (/proc/PID/smaps, against a daemon whose first log line was written
// this way). The UTC getters need no time zone.

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
/** The char code of a decimal digit. */
const digit = (n: number) => 48 + n;

/**
 * `new Date(ms).toISOString()` (2026-11-23T15:20:00.000Z); throws the same RangeError for an invalid time.
 * Made as one string of its 24 char codes: a template of its 13 pieces made a dozen strings on the
 * way (565 bytes of heap a call against 195, three times the CPU), and `faces list --cached` and the
 * console's face list write one per face (10,000 for a large group, at every visit).
 */
export function isoTime(ms: number = Date.now()): string {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  // Outside 0000-9999 (and for NaN) ISO 8601 needs the extended form: Date's own answer is rare enough.
  if (!(y >= 0 && y <= 9999)) return d.toISOString();
  const mo = d.getUTCMonth() + 1;
  const day = d.getUTCDate();
  const h = d.getUTCHours();
  const mi = d.getUTCMinutes();
  const s = d.getUTCSeconds();
  const m = d.getUTCMilliseconds();
  return String.fromCharCode(
    digit(Math.floor(y / 1000)), digit(Math.floor(y / 100) % 10), digit(Math.floor(y / 10) % 10), digit(y % 10), 45,
    digit(Math.floor(mo / 10)), digit(mo % 10), 45, digit(Math.floor(day / 10)), digit(day % 10), 84,
    digit(Math.floor(h / 10)), digit(h % 10), 58, digit(Math.floor(mi / 10)), digit(mi % 10), 58, digit(Math.floor(s / 10)), digit(s % 10), 46,
    digit(Math.floor(m / 100)), digit(Math.floor(m / 10) % 10), digit(m % 10), 90,
  );
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `new Date(ms).toUTCString()`, the HTTP Date header's form (Mon, 23 Nov 2026 15:20:00 GMT). */
export function httpDate(ms: number = Date.now()): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return d.toUTCString();
  return `${DAYS[d.getUTCDay()]}, ${pad2(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${year} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} GMT`;
}

/**
 * Our servers' responses carry a Date header written by httpDate: Node's own (res.sendDate) comes
 * from toUTCString, which would map ICU's time zone tables at the first `status` call.
 */
export function setDateHeader(res: { sendDate: boolean; setHeader(name: string, value: string): unknown }): void {
  res.sendDate = false;
  res.setHeader('Date', httpDate());
}
