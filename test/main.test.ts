import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from './helpers/tmp.js';
import { spawnDaemon } from './daemon/daemon-harness.js';

// src/main.ts's last words for a command with no logger of its own: a bug nobody catches. No such
// bug is known, so a preload module stands in for one (as in test/daemon/daemon-fatal.test.ts):
// it throws on SIGUSR2, outside any try, once the command runs (the emulator, serving until
// stopped). The operator must see what happened, in the output mode asked for, and exit 1.

async function emulatorWithBug(json: boolean, message = 'stand-in bug') {
  const bug = join(tmpDir('ta-main-'), 'bug.mjs');
  writeFileSync(bug, `process.on('SIGUSR2', () => { throw new Error(${JSON.stringify(message)}); });\n`);
  const p = spawnDaemon(undefined, { NODE_OPTIONS: `--import=${bug}` }, [...(json ? ['--json'] : []), 'emulator', '--port', '0']);
  await p.waitLog(() => p.stdout().includes('http://'), 10_000, 'the emulator to listen');
  p.signal('SIGUSR2');
  const { code } = await p.exited;
  return { code, out: { stdout: p.stdout(), stderr: p.stderr() } };
}

describe('an uncaught error in a command', () => {
  it('exits 1 with one line that names it: the stack as text, a JSON object with --json', async () => {
    const text = await emulatorWithBug(false);
    expect(text.code).toBe(1);
    // After the emulator's own log line ("emulator ready", JSON on stderr).
    expect(text.out.stderr).toMatch(/\nterminal-agent: exiting on an uncaught error \(uncaughtException\): Error: stand-in bug\n {4}at /);

    const json = await emulatorWithBug(true);
    expect(json.code).toBe(1);
    // Every stderr line a JSON object; the last one says what happened.
    const lines = json.out.stderr.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = lines.at(-1) as { error: string; code: string; stack: string };
    expect(line).toMatchObject({ error: 'exiting on an uncaught error (uncaughtException): stand-in bug', code: 'TA_ERR_INTERNAL' });
    expect(line.stack).toMatch(/^Error: stand-in bug\n {4}at /);
  });

  it('shows control characters in the message escaped, as a face name from the service would be', async () => {
    const text = await emulatorWithBug(false, 'bug with \x1b]0;pwned\x07\x1b[2J in it');
    expect(text.code).toBe(1);
    expect(text.out.stderr).toContain('terminal-agent: exiting on an uncaught error (uncaughtException): Error: bug with \\x1b]0;pwned\\x07\\x1b[2J in it\n    at ');
    expect(text.out.stderr).not.toContain('\x1b');
  });
});
