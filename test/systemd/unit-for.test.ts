import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// systemd/unit-for.sh, which writes the unit systemd/install.sh installs: ExecStart= on the node
// found on PATH and the prefix, and the inlining budget only where that node's V8 is 11 (Node 20).
// With the node running this test, and with a stand-in for a node of the other kind: a script that
// answers `-p process.versions.v8` as that node would (the machine has one node on PATH; fetching
// another major in a test is not possible here).

const SCRIPT = join(REPO_ROOT, 'systemd', 'unit-for.sh');
const FLAG = '--max-inlined-bytecode-size-cumulative=460';

function execStart(node: string, prefix = '/srv/ta'): string {
  const unit = execFileSync(SCRIPT, [node, prefix], { encoding: 'utf8' });
  expect(unit).not.toContain('/opt/terminal-agent');
  return /^ExecStart=(.*)$/m.exec(unit)![1]!;
}

function standIn(v8: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ta-unit-for-')), 'node');
  writeFileSync(path, `#!/bin/sh\n[ "$1" = -p ] && echo ${v8}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('systemd/unit-for.sh', () => {
  it('points ExecStart= at this node and the prefix, with the inlining budget only on V8 11', () => {
    const line = execStart(process.execPath);
    expect(line.startsWith(`${process.execPath} `)).toBe(true);
    expect(line.endsWith(' /srv/ta/dist/main.js run --config /etc/terminal-agent/config.yaml')).toBe(true);
    expect(line.includes(FLAG)).toBe(process.versions.v8.startsWith('11.'));
  });

  it.each([
    ['11.3.244.8-node.33', true],
    ['12.4.254.21-node.33', false],
    ['13.6.233.17-node.37', false],
  ])('with a node whose V8 is %s, keeps the inlining budget: %s', (v8, kept) => {
    const node = standIn(v8);
    expect(execStart(node)).toBe(`${node} ${kept ? `${FLAG} ` : ''}/srv/ta/dist/main.js run --config /etc/terminal-agent/config.yaml`);
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

  it('fails, printing no unit, when the node does not run', () => {
    expect(() => execFileSync(SCRIPT, ['/nonexistent/node', '/srv/ta'], { stdio: 'pipe' })).toThrow(/did not run/);
  });
});
