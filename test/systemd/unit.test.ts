import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// The unit file as systemd itself reads it (systemd-analyze, from Debian's systemd package, which
// .ci/run installs; no running systemd is needed).
const UNIT = join(REPO_ROOT, 'systemd', 'terminal-agent.service');

function directives(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const line of readFileSync(UNIT, 'utf8').split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) map.set(m[1]!, [...(map.get(m[1]!) ?? []), m[2]!]);
  }
  return map;
}

describe('systemd/terminal-agent.service', () => {
  it('passes systemd-analyze verify', () => {
    const r = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' });
    expect(r.error, 'systemd-analyze missing: apt-get install systemd').toBeUndefined();
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('scores OK or better in systemd-analyze security', () => {
    const out = execFileSync('systemd-analyze', ['security', '--offline=true', UNIT], { encoding: 'utf8' });
    const m = /Overall exposure level for terminal-agent\.service: ([\d.]+) (\w+)/.exec(out);
    expect(m, out.slice(-500)).not.toBeNull();
    expect(['PERFECT', 'SAFE', 'OK']).toContain(m![2]);
    expect(Number(m![1])).toBeLessThanOrEqual(2);
  });

  it('has what the product contract asks for', () => {
    const d = directives();
    expect(d.get('Type')).toEqual(['notify']);
    expect(d.get('WatchdogSec')?.[0]).toMatch(/^\d+s$/);
    expect(d.get('Restart')).toEqual(['always']);
    expect(d.get('StartLimitIntervalSec')).toEqual(['0']);
    expect(d.get('User')).toEqual(['terminal-agent']);
    expect(d.get('SupplementaryGroups')).toEqual(['audio']);
    expect(d.get('ProtectSystem')).toEqual(['strict']);
    expect(d.get('NoNewPrivileges')).toEqual(['yes']);
    expect(d.get('ReadWritePaths')?.[0]).toContain('/var/lib/terminal-agent');
    expect(d.get('LoadCredential')).toEqual([
      'terminal_secret:/etc/terminal-agent/credentials/terminal_secret',
      'api_key:/etc/terminal-agent/credentials/api_key',
    ]);
    // A background job that does not take the CPU from the terminal's own program when it wakes;
    // the benchmarks run the daemon with it too (test/bench/lib/daemon-run.mjs).
    expect(d.get('CPUSchedulingPolicy')).toEqual(['batch']);
    // The agent's own stop bound (20 s, src/daemon/daemon.ts) must fit in TimeoutStopSec.
    expect(Number(/^(\d+)s$/.exec(d.get('TimeoutStopSec')![0]!)![1])).toBeGreaterThan(20);
  });
});
