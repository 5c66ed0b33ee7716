import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { CLI_ENTRY, REPO_ROOT, runCliProcess, type CliRunResult } from '../helpers/cli.js';
import { daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';
import { startTlsFront } from '../bench/lib/tls-front.mjs';
import type { Emulator } from '../helpers/emulator.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { unitNodeFlags } from '../helpers/unit-flags.js';

// Whom the agent trusts over TLS (src/client/trust.ts): the system's CAs, as the CLI's #! line,
// the package's /usr/bin/terminal-agent and the unit's NODE_OPTIONS run node (--use-openssl-ca),
// plus service.ca_file's. Two HTTPS fronts for the emulator, each with a certificate of its own
// for localhost. The test cannot add a CA to this machine's /etc/ssl/certs: it names one the way
// OpenSSL lets any process name its system store, SSL_CERT_FILE (the package checks,
// packaging/check/inside.sh system_ca, do it for real with update-ca-certificates in a fresh root).

const UNIT_NODE_OPTIONS = unitNodeFlags(readFileSync(join(REPO_ROOT, 'systemd', 'terminal-agent.service'), 'utf8')).nodeOptions;

interface Check { check: string; result: string; detail: string; fix?: string }
type Front = Exclude<Awaited<ReturnType<typeof startTlsFront>>, { error: string }>;

async function front(emulator: Emulator, dir: string): Promise<Front> {
  const f = await startTlsFront(emulator.baseUrl, tmpDir(`${dir}-`));
  if ('error' in f) throw new Error(f.error);
  return f;
}

/** dist/main.js started by its own #! line, as npx and a shell start it; node first on PATH. */
function runByShebang(args: string[], env: Record<string, string>): Promise<CliRunResult> {
  return runCliProcess(args, { command: [CLI_ENTRY], env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, ...env } });
}

const checks = (r: CliRunResult) => new Map((JSON.parse(r.stdout) as { checks: Check[] }).checks.map((c) => [c.check, c]));

describe('TLS trust: the system\'s CAs and service.ca_file', () => {
  it('the CLI trusts a CA in the system\'s store and ca_file\'s together; without either it names both fixes', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-trust-');
    const [system, extra] = [await front(emulator, 'sys'), await front(emulator, 'extra')];
    try {
      const files = daemonFiles(join(dir, 'agent'), emulator);
      // base_url behind the front whose CA is the system's; face_base_url behind ca_file's.
      writeFileSync(files.configPath, readFileSync(files.configPath, 'utf8')
        .replace(/^ {2}base_url: .*$/m, `  base_url: ${system.url(emulator.baseUrl)}`)
        .replace(/^ {2}face_base_url: .*$/m, `  face_base_url: ${extra.url(emulator.faceBaseUrl)}`)
        .replace('service:\n', `service:\n  ca_file: ${extra.caFile}\n`));
      const withStore = { SSL_CERT_FILE: system.caFile };

      const both = checks(await runByShebang(['doctor', '--json', '--config', files.configPath], withStore));
      expect(both.get('tls base_url')).toMatchObject({ result: 'ok' });
      expect(both.get('tls face_base_url')).toMatchObject({ result: 'ok' });
      expect(both.get('credential terminal_secret')).toMatchObject({ result: 'ok' });
      const voices = await runByShebang(['voices', '--language', 'english', '--config', files.configPath], withStore);
      expect(voices.stderr).toBe('');
      expect(voices.code).toBe(0);
      expect(system.handshakes.full).toBeGreaterThan(0);
      expect(extra.handshakes.full).toBeGreaterThan(0);

      // The system's store without that CA: ca_file's front is still trusted, the other is not.
      const noStore = checks(await runByShebang(['doctor', '--json', '--config', files.configPath], {}));
      expect(noStore.get('tls face_base_url')).toMatchObject({ result: 'ok' });
      expect(noStore.get('tls base_url')).toMatchObject({ result: 'fail', detail: expect.stringContaining('DEPTH_ZERO_SELF_SIGNED_CERT') });
      expect(noStore.get('tls base_url')!.fix).toMatch(/update-ca-certificates.*service\.ca_file/);
      const refused = await runByShebang(['voices', '--language', 'english', '--config', files.configPath], {});
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/not trusted .*\/usr\/local\/share\/ca-certificates\/, then update-ca-certificates\) or set service\.ca_file/);

      // The control: node's own list of CAs (--use-bundled-ca) does not hold the front's, so what
      // trusted it above is the system's store. (`node dist/main.js` with no flag trusts node's
      // list with the official node, the package's, and the system's with Debian's nodejs, which
      // is built to: so a flag is needed to say which, and the CLI's #! line says it.)
      const ownList = checks(await runCliProcess(['doctor', '--json', '--config', files.configPath], { command: [process.execPath, '--use-bundled-ca', CLI_ENTRY], env: withStore }));
      expect(ownList.get('tls base_url')).toMatchObject({ result: 'fail' });
      expect(ownList.get('tls face_base_url')).toMatchObject({ result: 'ok' });
    } finally {
      await system.close();
      await extra.close();
    }
  });

  it('the daemon, with the unit\'s NODE_OPTIONS, syncs faces from a service whose CA is only in the system\'s store', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-trust-d-');
    const system = await front(emulator, 'sys');
    try {
      emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Ada', image: faceImagePng([200, 80, 40]) }]);
      const files = daemonFiles(join(dir, 'agent'), emulator);
      writeFileSync(files.configPath, readFileSync(files.configPath, 'utf8')
        .replace(/^ {2}base_url: .*$/m, `  base_url: ${system.url(emulator.baseUrl)}`)
        .replace(/^ {2}face_base_url: .*$/m, `  face_base_url: ${system.url(emulator.faceBaseUrl)}`));
      const cachedNames = () => {
        try {
          return (JSON.parse(readFileSync(join(files.stateDir, 'faces', 'index.json'), 'utf8')) as { name: string }[]).map((f) => f.name);
        } catch {
          return [];
        }
      };

      const untrusted = spawnDaemon(files.configPath, { NODE_OPTIONS: UNIT_NODE_OPTIONS });
      await untrusted.waitLog(isReady, 15_000, 'READY');
      const line = await untrusted.waitLog((l) => JSON.stringify(l).includes('update-ca-certificates'), 15_000, 'a log line naming the fix');
      expect(JSON.stringify(line)).toContain('service.ca_file');
      expect(cachedNames()).toEqual([]);
      untrusted.signal('SIGTERM');
      expect((await untrusted.exited).code).toBe(0);

      const trusted = spawnDaemon(files.configPath, { NODE_OPTIONS: UNIT_NODE_OPTIONS, SSL_CERT_FILE: system.caFile });
      await trusted.waitLog(() => cachedNames().includes('Ada'), 15_000, 'Ada in index.json');
      expect(system.handshakes.full).toBeGreaterThan(0);
      trusted.signal('SIGTERM');
      expect((await trusted.exited).code).toBe(0);
    } finally {
      await system.close();
    }
  });
});
