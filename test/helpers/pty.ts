import { spawn } from 'node:child_process';
import { CLI_ENTRY, REPO_ROOT } from './cli.js';

// A pseudo-terminal with no native addon: util-linux `script` runs the command on a pty of its own
// and copies everything the command drew (escape codes included) to its stdout.

export interface PtyResult {
  code: number | null;
  /** What the terminal received, with `\r\n` line ends and the escape codes. */
  output: string;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `node dist/main.js ...args` on a 100x30 terminal (or `size`: 0x0 is a terminal that reports no
 * size, as a serial console does); `prefix` runs before it (e.g. `timeout -s INT 3`).
 */
export function runCliInPty(args: readonly string[], env: Record<string, string | undefined> = {}, prefix = '', size = { cols: 100, rows: 30 }): Promise<PtyResult> {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'ALSA_CONFIG_PATH']) if (process.env[k] !== undefined) base[k] = process.env[k]!;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) base[k] = v;
  const command = `stty cols ${size.cols} rows ${size.rows}; ${prefix} ${quote(process.execPath)} ${quote(CLI_ENTRY)} ${args.map(quote).join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: REPO_ROOT, env: { ...base, TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (output += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (output += t));
    child.once('error', reject);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** ESC [ ... sequences: log-update erases the previous frame with them. */
export const ERASE_LINE = '\u001b[2K';

const ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');

/** The output with escape codes removed. */
export function plain(output: string): string {
  return output.replace(ESCAPE, '');
}
