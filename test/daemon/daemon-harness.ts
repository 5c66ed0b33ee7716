import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { onTestFinished } from 'vitest';
import { CLI_ENTRY, REPO_ROOT } from '../helpers/cli.js';
import type { Emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

// Runs the daemon as systemd would: a real `node dist/main.js run` process, with its JSON log on
// stdout, signals, and a NOTIFY_SOCKET bound here (a unix datagram socket, as systemd's).

export interface DaemonConfigOptions {
  /** enroll.face_check.mode (default off: most tests drop stand-in images). */
  faceCheck?: 'refuse' | 'warn' | 'off';
  /** Extra YAML appended at the top level (sections not written below). */
  extra?: string;
  terminalSecret?: string;
  apiKey?: string;
  logLevel?: string;
  syncInterval?: string;
  outputDevice?: string;
  inputDevice?: string;
}

export interface DaemonFiles {
  dir: string;
  configPath: string;
  stateDir: string;
  enrollDir: string;
  socketPath: string;
  secretPath: string;
  write(opts?: DaemonConfigOptions): void;
}

export function daemonFiles(dir: string, emulator: Emulator, base: DaemonConfigOptions = {}): DaemonFiles {
  const files: DaemonFiles = {
    dir,
    configPath: join(dir, 'config.yaml'),
    stateDir: join(dir, 'state'),
    enrollDir: join(dir, 'enroll'),
    socketPath: join(dir, 'ctl.sock'),
    secretPath: join(dir, 'terminal_secret'),
    write(opts = {}) {
      const o = { ...base, ...opts };
      writeFileSync(files.secretPath, `${o.terminalSecret ?? emulator.terminals[0]!.terminal_secret}\n`, { mode: 0o600 });
      writeFileSync(join(dir, 'api_key'), `${o.apiKey ?? emulator.apiKey}\n`, { mode: 0o600 });
      writeFileSync(files.configPath, [
        'service:',
        `  base_url: ${emulator.baseUrl}`,
        `  face_base_url: ${emulator.faceBaseUrl}`,
        `  terminal_secret_file: ${files.secretPath}`,
        `  api_key_file: ${join(dir, 'api_key')}`,
        '  request_timeout: 2s',
        '  retries: 1',
        `state_dir: ${files.stateDir}`,
        'faces:',
        `  sync_interval: ${o.syncInterval ?? '5m'}`,
        'enroll:',
        `  dir: ${files.enrollDir}`,
        '  settle_time: 200ms',
        '  rescan_interval: 2s',
        // Stand-in images (header and random bytes) unless a test brings real photos.
        '  face_check:',
        `    mode: ${o.faceCheck ?? 'off'}`,
        'audio:',
        `  output_device: ${o.outputDevice ?? 'default'}`,
        `  input_device: ${o.inputDevice ?? 'default'}`,
        'control:',
        `  socket: ${files.socketPath}`,
        'log:',
        `  level: ${o.logLevel ?? 'info'}`,
        o.extra ?? '',
      ].join('\n'));
    },
  };
  mkdirSync(dir, { recursive: true });
  files.write();
  return files;
}

export interface LogLine {
  level: string;
  msg: string;
  component?: string;
  [key: string]: unknown;
}

export interface DaemonProcess {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  logs(): LogLine[];
  waitLog(pred: (l: LogLine) => boolean, timeoutMs?: number, what?: string): Promise<LogLine>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal(sig: NodeJS.Signals): void;
}

/** `node dist/main.js run --config CONFIG` (or other args; no --config when `configPath` is undefined). */
/** `wrap`: a command that runs node, as `prlimit --fsize=N --` (it must exec node, keeping the pid). */
/** `node`: the node that runs `entry`, with node's own flags (default: this node, no flags). */
export function spawnDaemon(configPath: string | undefined, env: Record<string, string | undefined> = {}, args: string[] = ['run'], cwd = REPO_ROOT, entry = CLI_ENTRY, wrap: string[] = [], node: readonly string[] = [process.execPath]): DaemonProcess {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'ALSA_CONFIG_PATH']) if (process.env[k] !== undefined) base[k] = process.env[k]!;
  const fullEnv: Record<string, string> = { ...base };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete fullEnv[k];
    else fullEnv[k] = v;
  }
  const argv = [entry, ...args, ...(configPath === undefined ? [] : ['--config', configPath])];
  const [cmd, ...pre] = [...wrap, ...node];
  const child = spawn(cmd!, [...pre, ...argv], { cwd, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const reap = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  try {
    onTestFinished(reap);
  } catch {
    // Started from beforeAll: the caller stops it in afterAll; never leave it running after the file.
    process.once('exit', () => child.kill('SIGKILL'));
  }
  const logs = () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    logs,
    exited,
    signal: (sig) => child.kill(sig),
    async waitLog(pred, timeoutMs = 15_000, what = 'a log line') {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const hit = logs().find(pred) ?? (pred({ level: 'none', msg: '' }) ? { level: 'none', msg: '' } : undefined);
        if (hit) return hit;
        if (child.exitCode !== null || Date.now() > until) {
          throw new Error(`${what} never came (exit ${child.exitCode})\nstdout:\n${out.slice(-4000)}\nstderr:\n${err.slice(-2000)}`);
        }
        await sleep(25);
      }
    },
  };
}

export const isReady = (l: LogLine) => l.msg === 'terminal-agent is ready';

/**
 * The built tree copied as an installation of its own, whose files a test may take away under a
 * daemon run from it (pass join(copy, 'main.js') as spawnDaemon's entry); node_modules for the addons.
 */
export function installedCopy(): string {
  const root = tmpDir('ta-install-');
  const copy = join(root, 'dist');
  cpSync(join(REPO_ROOT, 'dist'), copy, { recursive: true, verbatimSymlinks: true });
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'));
  // What the package lays beside dist/: the face check's model, the demo's sample photos.
  symlinkSync(join(REPO_ROOT, 'models'), join(root, 'models'));
  symlinkSync(join(REPO_ROOT, 'samples'), join(root, 'samples'));
  return copy;
}

/**
 * Removes the client's HTTP code (undici's chunk, read only at the first request) from an
 * installedCopy(); returns the removed file's path.
 */
export function removeProxyChunk(copy: string): string {
  const bundle = join(copy, 'bundle');
  const undici = readdirSync(bundle).filter((n) => /^undici-[\w-]+\.js$/.test(n));
  if (undici.length !== 1) throw new Error(`expected one undici chunk in ${bundle}, found ${undici.length}`);
  const gone = join(bundle, undici[0]!);
  rmSync(gone);
  return gone;
}

interface DgramSocket {
  on(event: 'message', cb: (buf: Buffer) => void): void;
  on(event: 'error', cb: (err: Error) => void): void;
  bind(path: string): void;
  close(): void;
}

/** A stand-in for systemd's notify socket: records every datagram the daemon sends. */
export function listenNotify(path: string): { path: string; messages: string[]; waitFor(pred: (m: string) => boolean, timeoutMs?: number): Promise<string>; count(pred: (m: string) => boolean): number } {
  const require = createRequire(import.meta.url);
  const unix = require('unix-dgram') as { createSocket(type: string): DgramSocket };
  const sock = unix.createSocket('unix_dgram');
  const messages: string[] = [];
  sock.on('message', (buf) => messages.push(buf.toString()));
  sock.on('error', () => {});
  sock.bind(path);
  onTestFinished(() => sock.close());
  return {
    path,
    messages,
    count: (pred) => messages.filter(pred).length,
    async waitFor(pred, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const hit = messages.find(pred);
        if (hit) return hit;
        if (Date.now() > until) throw new Error(`no notify message matched; got:\n${messages.join('\n---\n')}`);
        await sleep(20);
      }
    },
  };
}

/** GET/POST on the daemon's control socket, raw (status code and body). */
export async function controlRequest(socketPath: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string; json: () => unknown; headers: Record<string, unknown> }> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = request({ socketPath, method, path, headers: payload ? { 'content-type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, json: () => JSON.parse(text), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}
