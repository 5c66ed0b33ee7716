import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

// The last line of defence: a bug that throws where nothing catches it (the CI failure of an
// unhandled stream 'error' during SIGTERM was one). The daemon must leave a JSON line saying what
// happened, with no secret in it, and exit 1 so that systemd's Restart=always starts it again.
// No such bug is known, so a preload module stands in for one: it throws when the test sends
// SIGUSR2 (once the daemon is ready), outside any try, the way an unhandled 'error' event surfaces.

describe('terminal-agent run meets an uncaught error', () => {
  it('logs one fatal line naming the error, without the secret, and exits 1', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-daemon-fatal-');
    const files = daemonFiles(dir, emulator);
    const secret = emulator.terminals[0]!.terminal_secret;
    const bug = join(dir, 'bug.mjs');
    writeFileSync(bug, `process.on('SIGUSR2', () => { throw new Error('stand-in bug: could not send with ${secret}'); });\n`);
    const d = spawnDaemon(files.configPath, { NODE_OPTIONS: `--import=${bug}` });
    await d.waitLog(isReady);
    d.signal('SIGUSR2');
    const exit = await d.exited;
    expect(exit).toEqual({ code: 1, signal: null });
    const fatal = d.logs().filter((l) => l.level === 'fatal');
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toMatchObject({ component: 'daemon', origin: 'uncaughtException' });
    expect(fatal[0]!.msg).toMatch(/uncaught error .*systemd restarts the agent/);
    expect(JSON.stringify(fatal[0])).toContain('stand-in bug: could not send with [REDACTED]');
    expect(JSON.stringify(d.logs())).not.toContain(secret);
    expect(d.stderr()).not.toContain(secret);
  });
});
