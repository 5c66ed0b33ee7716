import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// systemd/unit-for.sh, which writes the unit systemd/install.sh installs: ExecStart= on the node
// found on PATH and the prefix, every other line as the checkout's unit has it.

const SCRIPT = join(REPO_ROOT, 'systemd', 'unit-for.sh');

describe('systemd/unit-for.sh', () => {
  it('points ExecStart= at this node and the prefix, with no node flag', () => {
    const unit = execFileSync(SCRIPT, [process.execPath, '/srv/ta'], { encoding: 'utf8' });
    expect(unit).not.toContain('/opt/terminal-agent');
    expect(/^ExecStart=(.*)$/m.exec(unit)![1]).toBe(`${process.execPath} /srv/ta/dist/main.js run --config /etc/terminal-agent/config.yaml`);
    expect(unit).toMatch(/^Environment=NODE_COMPILE_CACHE=\/var\/cache\/terminal-agent$/m);
  });

  // The restart back-off keys exist from systemd 254 (Debian 13); systemd 252 (Debian 12) warns
  // about them. A stand-in systemctl on PATH answers --version as each would.
  it.each([
    ['252 (252.39-1~deb12u2)', false],
    ['257 (257.8-1~deb13u2)', true],
  ])('on systemd %s, adds RestartSteps= and RestartMaxDelaySec= after RestartSec=: %s', (version, added) => {
    const bin = mkdtempSync(join(tmpdir(), 'ta-unit-for-sd-'));
    writeFileSync(join(bin, 'systemctl'), `#!/bin/sh\necho 'systemd ${version}'\necho '+PAM +AUDIT'\n`);
    chmodSync(join(bin, 'systemctl'), 0o755);
    const unit = execFileSync(SCRIPT, [process.execPath, '/srv/ta'], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    expect(unit).toContain('\nRestart=always\nRestartSec=5s\n');
    expect(unit.includes('\nRestartSec=5s\nRestartSteps=5\nRestartMaxDelaySec=5min\n')).toBe(added);
  });
});
