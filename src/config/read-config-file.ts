import { isUtf8 } from 'node:buffer';
import { promisify } from 'node:util';
import { close, closeSync, constants, fstat, fstatSync, open, openSync, read, readSync, type Stats } from 'node:fs';
import { ConfigError } from '../errors.js';

// Reading the config file without trusting it: a FIFO given as --config must not block `run`,
// `doctor` or a SIGHUP reload (opened with O_NONBLOCK, then refused as not a regular file), a
// huge file must not be read into memory, and text that is not UTF-8 must be an error with its
// line rather than silently turning into U+FFFD.
// readConfigFileSync does the same for the CLI's light commands (`status`, `faces list --cached`):
// libuv's thread pool costs them about 2 ms, and they wait for the file anyway. They try
// readPlainConfigSync first, which reads a usual file with less code and leaves anything else to
// readConfigFileSync or the full load.

/** A config is a few KB; anything this large is the wrong file. */
export const CONFIG_MAX_BYTES = 1024 * 1024;

function fail(file: string, message: string, line?: number, cause?: unknown): never {
  throw new ConfigError([{ path: '', file, message, ...(line !== undefined ? { line } : {}) }], cause === undefined ? undefined : { cause });
}

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device node';
  return 'not a regular file';
}

function lineAt(buf: Buffer, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (buf[i] === 0x0a) line++;
  return line;
}

/** Offset of the first byte sequence that is not UTF-8, or -1. */
function firstInvalidUtf8(buf: Buffer): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    const n = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    if (n > 0) {
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(i, i + n + 1));
      } catch {
        return i;
      }
    }
    i += n + 1;
  }
  return -1;
}

const openFlags = constants.O_RDONLY | constants.O_NONBLOCK;

/** What reading the open file asks of its caller next: its stat, or bytes read into `buf` at `at`. */
type Ask = { stat: true } | { stat: false; buf: Buffer; at: number };

/**
 * The reading of an open config file as a sequence of asks, with the answer to each (a Stats, a
 * byte count) passed back in; returns the file's bytes. One loop, for both callers: readConfigFile
 * answers with callbacks, readConfigFileSync with blocking calls.
 */
function* readSteps(file: string): Generator<Ask, Buffer, Stats | number> {
  const st = (yield { stat: true }) as Stats;
  checkStat(file, st);
  // Room for the file as it was at the stat and one byte more; a file that grew since gets the
  // whole allowance (a command reads a few KB, not a zeroed megabyte, each time). The byte beyond
  // the allowance shows a file over it.
  let buf = Buffer.allocUnsafe(st.size + 1);
  let n = 0;
  for (;;) {
    const bytesRead = (yield { stat: false, buf, at: n }) as number;
    if (bytesRead === 0 || (n += bytesRead) > CONFIG_MAX_BYTES) break;
    if (n === buf.length) buf = Buffer.concat([buf, Buffer.alloc(CONFIG_MAX_BYTES + 1 - n)]);
  }
  if (n > CONFIG_MAX_BYTES) fail(file, `config file is over the ${CONFIG_MAX_BYTES / 1024 / 1024} MB a config may have: check that --config names the right file`);
  return buf.subarray(0, n);
}

export async function readConfigFile(file: string): Promise<string> {
  // node:fs's callbacks: node:fs/promises would cost `config check` about 5 M instructions to load.
  const [openAsync, fstatAsync, readAsync, closeAsync] = [promisify(open), promisify(fstat), promisify(read), promisify(close)];
  let fd: number;
  try {
    fd = await openAsync(file, openFlags);
  } catch (err) {
    openFailed(file, err);
  }
  let buf: Buffer;
  try {
    const steps = readSteps(file);
    let step = steps.next();
    while (!step.done) {
      const ask = step.value;
      step = steps.next(ask.stat ? await fstatAsync(fd) : (await readAsync(fd, ask.buf, ask.at, ask.buf.length - ask.at, ask.at)).bytesRead);
    }
    buf = step.value;
  } finally {
    await closeAsync(fd);
  }
  return configText(file, buf);
}

/** readConfigFile, with blocking calls: for a CLI command that has nothing else to do meanwhile. */
export function readConfigFileSync(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, openFlags);
  } catch (err) {
    openFailed(file, err);
  }
  let buf: Buffer;
  try {
    const steps = readSteps(file);
    let step = steps.next();
    while (!step.done) {
      const ask = step.value;
      step = steps.next(ask.stat ? fstatSync(fd) : readSync(fd, ask.buf, ask.at, ask.buf.length - ask.at, ask.at));
    }
    buf = step.value;
  } finally {
    closeSync(fd);
  }
  return configText(file, buf);
}

/** Files the quick read takes; a larger one (a config is a few KB) goes to readConfigFileSync. */
const QUICK_MAX_BYTES = 64 * 1024;

/**
 * The text of a config file when nothing about it is unusual, else undefined: for `status` and
 * `faces list --cached`, whose caller then reads it with readConfigFileSync (or loads it in
 * full), which reports the problem. Unusual: not openable, not read whole within 64 KB at once
 * (a directory, a FIFO, a device), empty or comments only, a NUL byte, or not UTF-8 (the
 * decoder's U+FFFD; a file that holds that character is read again the long way). The long way
 * costs a `status` about 1 M instructions more: an fstat's Stats object, a generator, the
 * UTF-8 check and a regular expression, each compiled on first use.
 */
export function readPlainConfigSync(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, openFlags);
  } catch {
    return undefined;
  }
  let text: string;
  try {
    const buf = Buffer.allocUnsafe(QUICK_MAX_BYTES);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, n);
    if (n === buf.length) return undefined;
    text = buf.toString('utf8', 0, n);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
  if (text.includes('\0') || text.includes('\uFFFD') || onlyComments(text)) return undefined;
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Whether the text is whitespace and `#` comments only: `text.replace(/#[^\n]*\/g, '').trim() === ''` (configText) without compiling a regular expression. */
function onlyComments(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '#') {
      const eol = text.indexOf('\n', i);
      if (eol < 0) return true;
      i = eol;
    } else if (text[i]!.trim() !== '') return false;
  }
  return true;
}

function openFailed(file: string, err: unknown): never {
  const code = (err as NodeJS.ErrnoException).code;
  fail(file,
    code === 'ENOENT'
      ? 'config file not found: pass --config PATH or set TERMINAL_AGENT_CONFIG (default /etc/terminal-agent/config.yaml); config/config.example.yaml is a documented starting point'
      : code === 'EACCES' || code === 'EPERM'
        ? 'config file is not readable by this user: fix its owner/mode (e.g. chmod 0640, group terminal-agent)'
        : code === 'ENXIO'
          ? 'config path is a socket, not a YAML file: point --config at the YAML file'
          : `config file cannot be read (${code ?? 'error'}): check the path and permissions`,
    undefined, err);
}

function checkStat(file: string, st: Stats): void {
  if (st.isDirectory()) fail(file, 'config path is a directory: point --config at the YAML file');
  if (!st.isFile()) fail(file, `config path is ${kindOf(st)}, not a YAML file: point --config at the YAML file`);
  if (st.size > CONFIG_MAX_BYTES) {
    fail(file, `config file is ${st.size} bytes, over the ${CONFIG_MAX_BYTES / 1024 / 1024} MB a config may have (a config is a few KB): check that --config names the right file`);
  }
}

function configText(file: string, buf: Buffer): string {
  const nul = buf.indexOf(0);
  if (nul >= 0) fail(file, 'config file holds binary data (a NUL byte), not YAML text: point --config at the YAML file, or restore it from config/config.example.yaml', lineAt(buf, nul));
  // isUtf8 (native) for the usual answer; the byte-by-byte search only to name a bad byte.
  const bad = isUtf8(buf) ? -1 : firstInvalidUtf8(buf);
  if (bad >= 0) fail(file, `config file is not UTF-8 text (byte 0x${buf[bad]!.toString(16)} at offset ${bad}): save it as UTF-8`, lineAt(buf, bad));
  const text = buf.toString('utf8').replace(/^\uFEFF/, '');
  if (text.replace(/#[^\n]*/g, '').trim() === '') {
    fail(file, 'config file is empty: start from config/config.example.yaml (it documents every key)');
  }
  return text;
}
