import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { daemonFiles, isReady, spawnDaemon, type DaemonProcess } from '../daemon/daemon-harness.js';

// contrib/prometheus/: the rules pass promtool (Debian's `prometheus` package), and every metric the
// rules and the dashboard name is one a real daemon serves on its TCP listener.

const run = promisify(execFile);
const DIR = join(REPO_ROOT, 'contrib', 'prometheus');

let emulator: Emulator;
let tmp: { dir: string; remove(): void };
let withTcp: DaemonProcess;
let plain: DaemonProcess;
let port: number;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return p;
}

/** TCP ports the process listens on, from /proc (its socket inodes in LISTEN state). */
function listeningTcpPorts(pid: number): number[] {
  const inodes = new Set(readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
    } catch {
      return undefined;
    }
  }).filter(Boolean));
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9])) ports.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** Metric names in PromQL expressions (without histogram suffixes), functions and keywords left out. */
function metricNames(exprs: string[]): Set<string> {
  const names = new Set<string>();
  for (const e of exprs) {
    const stripped = e.replace(/\{[^}]*\}/g, '{}').replace(/"[^"]*"/g, '""');
    for (const m of stripped.matchAll(/\b([a-z_][a-z0-9_]*)\b(?!\s*\()/g)) {
      const w = m[1]!;
      if (/^(terminal_agent_|process_|nodejs_|up$)/.test(w)) names.add(w.replace(/_(bucket|count|sum)$/, ''));
    }
  }
  return names;
}

describe('contrib/prometheus', () => {
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0 });
    tmp = tmpDirManual('ta-prom-');
    port = await freePort();
    const a = daemonFiles(join(tmp.dir, 'a'), emulator, { extra: `metrics:\n  listen: 127.0.0.1:${port}\n` });
    const b = daemonFiles(join(tmp.dir, 'b'), emulator);
    withTcp = spawnDaemon(a.configPath);
    plain = spawnDaemon(b.configPath);
    await Promise.all([withTcp.waitLog(isReady), plain.waitLog(isReady)]);
  });
  afterAll(async () => {
    for (const d of [withTcp, plain]) d?.signal('SIGTERM');
    await Promise.all([withTcp?.exited, plain?.exited]);
    await emulator?.close();
    tmp?.remove();
  });

  it('a daemon opens no TCP port unless metrics.listen is set', () => {
    expect(listeningTcpPorts(plain.pid)).toEqual([]);
    expect(listeningTcpPorts(withTcp.pid)).toEqual([port]);
    expect(withTcp.logs().find((l) => l.msg === 'metrics listening for Prometheus')).toMatchObject({ listen: `127.0.0.1:${port}`, port });
  });

  it('promtool accepts the rules, their unit tests pass, and the scrape config is valid', async () => {
    const check = await run('promtool', ['check', 'rules', 'terminal-agent.rules.yml'], { cwd: DIR });
    expect(check.stdout).toContain('SUCCESS: 8 rules found');
    const test = await run('promtool', ['test', 'rules', 'terminal-agent.rules.test.yml'], { cwd: DIR });
    expect(test.stdout).toContain('SUCCESS');
    const config = await run('promtool', ['check', 'config', 'prometheus.yml'], { cwd: DIR });
    expect(config.stdout).toContain('is valid prometheus config file syntax');
  });

  it('every metric the rules and the dashboard use is served by the daemon over TCP', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    served.add('up'); // Prometheus's own, per target
    const rules = readFileSync(join(DIR, 'terminal-agent.rules.yml'), 'utf8');
    const ruleExprs = [...rules.matchAll(/expr: \|?\n?([\s\S]*?)\n\s+(?:for|labels):/g)].map((m) => m[1]!);
    expect(ruleExprs).toHaveLength(8);
    const dashboard = JSON.parse(readFileSync(join(DIR, 'grafana-dashboard.json'), 'utf8')) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
    const dashExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(dashExprs.length).toBeGreaterThan(20);
    const used = metricNames([...ruleExprs, ...dashExprs]);
    expect(used.size).toBeGreaterThan(20);
    expect([...used].filter((n) => !served.has(n))).toEqual([]);
    // The figures the alerts are built on, with the values of a healthy start.
    expect(text).toMatch(/^terminal_agent_credentials_refused\{component="faces"\} 0$/m);
    expect(text).toMatch(/^terminal_agent_face_sync_interval_seconds 300$/m);
    expect(text).toMatch(/^terminal_agent_audio_device_errors_total\{role="output"\} 0$/m);
    expect(text).toMatch(/^process_start_time_seconds \d+/m);
  });
});
