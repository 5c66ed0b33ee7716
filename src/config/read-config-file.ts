import { isUtf8 } from 'node:buffer';
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { ConfigError } from '../errors.js';

// Reading the config file without trusting it: a FIFO given as --config must not block `run`,
// `doctor` or a SIGHUP reload (opened with O_NONBLOCK, then refused as not a regular file), a
// huge file must not be read into memory, and text that is not UTF-8 must be an error with its
// line rather than silently turning into U+FFFD.
// readConfigFileSync does the same for the CLI's light commands (`status`, `faces list --cached`):
// node:fs/promises and libuv's thread pool cost them about 2 ms, and they wait for the file anyway.

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

export async function readConfigFile(file: string): Promise<string> {
  const { open } = await import('node:fs/promises');
  let fh: FileHandle;
  try {
    fh = await open(file, openFlags);
  } catch (err) {
    openFailed(file, err);
  }
  let buf: Buffer;
  try {
    checkStat(file, await fh.stat());
    buf = await readAll(file, async (b, n) => (await fh.read(b, n, b.length - n, n)).bytesRead);
  } finally {
    await fh.close();
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
    const st = fstatSync(fd);
    checkStat(file, st);
    // Room for the file as it was at the stat and one byte more; a file that grew since gets the
    // whole allowance (a command reads a few KB, not a zeroed megabyte, each time).
    buf = Buffer.allocUnsafe(st.size + 1);
    let n = 0;
    for (;;) {
      const bytesRead = readSync(fd, buf, n, buf.length - n, n);
      if (bytesRead === 0 || (n += bytesRead) > CONFIG_MAX_BYTES) break;
      if (n === buf.length) buf = Buffer.concat([buf, Buffer.alloc(CONFIG_MAX_BYTES + 1 - n)]);
    }
    buf = sizeChecked(file, buf, n);
  } finally {
    closeSync(fd);
  }
  return configText(file, buf);
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

/** Reads into a buffer one byte larger than allowed: that byte shows a file that grew after the stat. */
async function readAll(file: string, read: (buf: Buffer, at: number) => Promise<number>): Promise<Buffer> {
  const buf = Buffer.alloc(CONFIG_MAX_BYTES + 1);
  let n = 0;
  for (;;) {
    const bytesRead = await read(buf, n);
    if (bytesRead === 0 || (n += bytesRead) === buf.length) break;
  }
  return sizeChecked(file, buf, n);
}

function sizeChecked(file: string, buf: Buffer, n: number): Buffer {
  if (n > CONFIG_MAX_BYTES) fail(file, `config file is over the ${CONFIG_MAX_BYTES / 1024 / 1024} MB a config may have: check that --config names the right file`);
  return buf.subarray(0, n);
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
