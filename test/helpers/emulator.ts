import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { onTestFinished } from 'vitest';
import { CLI_ENTRY } from './cli.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';

export type { Emulator, EmulatorOptions } from '../../src/emulator/index.js';

/**
 * Starts a real emulator on 127.0.0.1, port 0, with speaker training finishing after 200 ms.
 * Called inside a test, it closes when the test finishes; called from beforeAll/beforeEach, close
 * it yourself in afterAll/afterEach (`await emulator.close()`, safe to call twice).
 */
export async function startTestEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const emulator = await startEmulator({ host: '127.0.0.1', port: 0, trainMs: 200, ...opts });
  try {
    onTestFinished(() => emulator.close());
  } catch {
    // Not inside a test (a beforeAll hook): the caller closes it.
  }
  return emulator;
}

/** The first terminal's credentials, the usual case. */
export function terminalOf(emulator: Emulator, index = 0): { terminal_secret: string; group_id: string } {
  const t = emulator.terminals[index];
  if (!t) throw new Error(`the emulator has no terminal #${index}`);
  return t;
}

export interface EmulatorReadyLine {
  base_url: string;
  face_base_url: string;
  terminals: { terminal_secret: string; group_id: string }[];
  api_key: string;
}

export interface EmulatorProcess {
  ready: EmulatorReadyLine;
  child: ChildProcess;
  /** Everything the process wrote so far. */
  output(): { stdout: string; stderr: string };
  /** Sends SIGTERM and waits for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/**
 * Spawns the built CLI (`node dist/main.js emulator --json --port 0 ...args`) and resolves once
 * its ready line is printed. Stopped when the current test finishes (when called inside a test).
 */
export async function spawnEmulatorProcess(args: readonly string[] = [], timeoutMs = 20_000): Promise<EmulatorProcess> {
  if (!existsSync(CLI_ENTRY)) throw new Error(`${CLI_ENTRY} is missing: run 'npm run build' first`);
  const child = spawn(process.execPath, [CLI_ENTRY, 'emulator', '--json', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const r = await exited;
    return { ...r, stdout, stderr };
  };
  try {
    onTestFinished(async () => void (await stop()));
  } catch {
    // Outside a test: the caller stops it.
  }
  const ready = await new Promise<EmulatorReadyLine>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`emulator printed no ready line within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`)), timeoutMs);
    const onData = () => {
      const nl = stdout.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      try {
        resolve(JSON.parse(stdout.slice(0, nl)) as EmulatorReadyLine);
      } catch (err) {
        reject(err as Error);
      }
    };
    child.stdout.on('data', onData);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`emulator exited (code ${code}) before it was ready\nstdout: ${stdout}\nstderr: ${stderr}`));
    });
  });
  return { ready, child, output: () => ({ stdout, stderr }), stop };
}
