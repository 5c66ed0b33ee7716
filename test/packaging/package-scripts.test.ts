import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';
import { needMountNamespace } from '../helpers/tmp.js';

// What can be checked of the Debian packaging without building it (npm run package takes minutes
// and cross-compiles) or emulating arm64: packaging/check-*.sh do that by hand (docs/packaging.md).
const PKG = join(REPO_ROOT, 'packaging');
const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: 'utf8', cwd: REPO_ROOT });

describe('Debian packaging', () => {
  it.each(['preinst', 'postinst', 'prerm', 'postrm'])('maintainer script %s parses with /bin/sh and is executable', (name) => {
    const file = join(PKG, 'debian', name);
    const r = run('sh', ['-n', file]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe('#!/bin/sh');
    expect(run('test', ['-x', file]).status).toBe(0);
  });

  it.each(['build.sh', 'check-amd64.sh', 'check-arm64.sh', 'check-upgrade.sh', 'check-systemd.sh', 'check-operator.sh', 'check/inside.sh', 'check/lib.sh'])('%s parses with bash', (name) => {
    const r = run('bash', ['-n', join(PKG, name)]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  // What each maintainer script asks systemd for, as dpkg calls them in an upgrade, a failed upgrade
  // and a remove: a private mount namespace gives the scripts a /run/systemd/system (systemd runs
  // on a terminal, not here), and deb-systemd-invoke is a stand-in on PATH that records its
  // arguments. check-systemd.sh runs the same scripts under a real systemd.
  function systemdCalls(script: string, ...args: string[]): string[] {
    needMountNamespace('give the maintainer scripts a /run/systemd/system of their own');
    const dir = mkdtempSync(join(tmpdir(), 'ta-maint-'));
    const log = join(dir, 'calls');
    writeFileSync(join(dir, 'deb-systemd-invoke'), `#!/bin/sh\necho "$*" >>${log}\n`);
    for (const stub of ['deb-systemd-helper', 'systemctl', 'dpkg-statoverride', 'adduser', 'getent', 'deluser', 'delgroup']) writeFileSync(join(dir, stub), '#!/bin/sh\nexit 0\n');
    for (const f of ['deb-systemd-invoke', 'deb-systemd-helper', 'systemctl', 'dpkg-statoverride', 'adduser', 'getent', 'deluser', 'delgroup']) chmodSync(join(dir, f), 0o755);
    const inner = `mount -t tmpfs none /run && mkdir -p /run/systemd/system && exec "$0" "$@"`;
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', inner, join(PKG, 'debian', script), ...args], {
      encoding: 'utf8',
      env: { PATH: `${dir}:/usr/sbin:/usr/bin:/sbin:/bin` },
    });
    expect(r.status, `${script} ${args.join(' ')}: ${r.stderr}`).toBe(0);
    try {
      return readFileSync(log, 'utf8').trim().split('\n');
    } catch {
      return [];
    }
  }

  it('stops the daemon before an upgrade unpacks, and starts the old one again if the upgrade fails', () => {
    expect(systemdCalls('preinst', 'upgrade', '1.0.0', '1.1.0')).toEqual(['stop terminal-agent.service']);
    expect(systemdCalls('preinst', 'install')).toEqual([]);
    expect(systemdCalls('prerm', 'upgrade', '1.1.0')).toEqual([]);
    expect(systemdCalls('postrm', 'abort-upgrade', '1.0.0')).toEqual(['start terminal-agent.service']);
    expect(systemdCalls('prerm', 'remove')).toEqual(['stop terminal-agent.service']);
  });

  it('points the packaged unit at the bundled node and the package prefix', () => {
    const r = run(join(PKG, 'unit.sh'), ['systemd/terminal-agent.service', '/usr/lib/terminal-agent']);
    expect(r.status, r.stderr).toBe(0);
    const execStart = r.stdout.split('\n').filter((l) => l.startsWith('ExecStart='));
    // With V8's memory saver mode, which the package's node (V8 13) knows and a checkout's Node 20 refuses.
    expect(execStart).toEqual(['ExecStart=/usr/lib/terminal-agent/bin/node --memory-saver-mode /usr/lib/terminal-agent/dist/main.js run --config /etc/terminal-agent/config.yaml']);
    expect(r.stdout).not.toContain('/opt/terminal-agent');
    expect(r.stdout).toContain('LoadCredential=terminal_secret:/etc/terminal-agent/credentials/terminal_secret');
    // Node's compile cache: in the folder systemd makes for the unit (writable under ProtectSystem=strict).
    expect(r.stdout).toMatch(/^CacheDirectory=terminal-agent$/m);
    expect(r.stdout).toMatch(/^Environment=NODE_COMPILE_CACHE=\/var\/cache\/terminal-agent$/m);
  });

  it('refuses a unit whose ExecStart it cannot rewrite, naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-unit-'));
    const unit = join(dir, 'terminal-agent.service');
    writeFileSync(unit, readFileSync(join(REPO_ROOT, 'systemd/terminal-agent.service'), 'utf8').replace(/^ExecStart=.*$/m, 'ExecStart=/usr/local/bin/terminal-agent run'));
    const r = run(join(PKG, 'unit.sh'), [unit, '/usr/lib/terminal-agent']);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`could not point ExecStart= of ${unit} at /usr/lib/terminal-agent/bin/node`);
  });

  it('marks only the config as a conffile, and ships no secret', () => {
    expect(readFileSync(join(PKG, 'debian', 'conffiles'), 'utf8')).toBe('/etc/terminal-agent/config.yaml\n');
    const build = readFileSync(join(PKG, 'build.sh'), 'utf8');
    expect(build).toContain('"$SRC/config/config.example.yaml" "$root/etc/$PKG/config.yaml"');
    expect(build).not.toMatch(/credentials\/(terminal_secret|api_key)/);
    expect(readFileSync(join(PKG, 'debian', 'postinst'), 'utf8')).toContain('(umask 077; : >"$ETC/credentials/$c")');
  });

  it('pins a Node.js runtime of a long-term-support line still supported (24: to April 2028)', () => {
    // Node 20, which the package carried before, reached its end of life in April 2026: no security
    // release since 20.20.2. LTS lines are the even majors.
    const v = readFileSync(join(PKG, 'node-version'), 'utf8').trim().split('.').map(Number);
    expect(v).toHaveLength(3);
    expect(v[0]! % 2).toBe(0);
    expect(v[0]).toBeGreaterThanOrEqual(24);
  });
});
