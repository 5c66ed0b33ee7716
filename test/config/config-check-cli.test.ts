// `terminal-agent config check` spawned as a real process (build first: npx tsc -p tsconfig.json).
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCliProcess, type CliRunResult } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { makeLocalhostCert } from '../helpers/tls-cert.js';

const EXAMPLE = join(REPO_ROOT, 'config', 'config.example.yaml');
const URLS = `service:\n  base_url: https://api.example.com\n  face_base_url: https://api.example.com/v1/api\n`;

function expectNoSecret(r: CliRunResult, ...secrets: string[]): void {
  for (const s of secrets) {
    expect(r.stdout).not.toContain(s);
    expect(r.stderr).not.toContain(s);
  }
}

describe('terminal-agent config check', () => {
  it('the example file passes given a secret in the environment, and the summary hides it', async () => {
    const secret = 'Ex4mple-Terminal-Secret-9f8e7d';
    const r = await runCliProcess(['config', 'check', '--config', EXAMPLE], { env: { TERMINAL_AGENT_TERMINAL_SECRET: secret } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`config OK: ${EXAMPLE}`);
    expect(r.stdout).toMatch(/terminal_secret\s+set \(from \$TERMINAL_AGENT_TERMINAL_SECRET\)/);
    expect(r.stdout).toMatch(/api_key\s+not set/);
    expectNoSecret(r, secret);
  });

  it('finds the file through TERMINAL_AGENT_CONFIG; --json gives {ok, problems, summary} without secrets', async () => {
    const dir = tmpDir();
    const path = join(dir, 'c.yaml');
    writeFileSync(join(dir, 'key'), 'Api-Key-Value-1234\n');
    writeFileSync(path, `${URLS}  terminal_secret: "Inline-Secret-5678"\n  api_key_file: key\n`);
    const r = await runCliProcess(['config', 'check', '--json'], { env: { TERMINAL_AGENT_CONFIG: path } });
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as { ok: boolean; file: string; problems: unknown[]; summary: Record<string, string> };
    expect(body).toMatchObject({ ok: true, file: path, problems: [] });
    expect(body.summary.terminal_secret).toBe('set (inline in the config file)');
    expect(body.summary.api_key).toBe(`set (from file ${join(dir, 'key')})`);
    expectNoSecret(r, 'Inline-Secret-5678', 'Api-Key-Value-1234');
  });

  it('exits 78 and prints every problem with file:line, never the secrets', async () => {
    const dir = tmpDir();
    const path = join(dir, 'c.yaml');
    writeFileSync(join(dir, 'key'), 'File-Api-Key-abcdef\n');
    writeFileSync(
      path,
      `service:\n  base_url: http://203.0.113.7\n  face_base_url: https://api.example.com/v1/api\n  terminal_secret: "Inline-Secret-0042"\n  api_key_file: key\n  retries: lots\nfaces:\n  sync_interval: 5 minutes\nenroll:\n  max_size: 20MB\n`,
    );
    const r = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(r.code).toBe(78);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe('config has 4 problems:');
    expect(lines[1]).toMatch(new RegExp(`^  ${path}:2: service.base_url: plain http://`));
    expect(lines[2]).toMatch(new RegExp(`^  ${path}:6: service.retries: must be a whole number`));
    expect(lines[3]).toMatch(new RegExp(`^  ${path}:8: faces.sync_interval: "5 minutes" is not a duration`));
    expect(lines[4]).toBe(`  ${path}:10: enroll.max_size: unknown key 'max_size': did you mean 'max_file_size'?`);
    expectNoSecret(r, 'Inline-Secret-0042', 'File-Api-Key-abcdef');
  });

  it('--json on problems: {ok:false, problems:[{path, message, file, line}]}, exit 78', async () => {
    const path = join(tmpDir(), 'c.yaml');
    writeFileSync(path, `service:\n  base_url: https://api.example.com\n`);
    const r = await runCliProcess(['config', 'check', '--config', path, '--json'], { env: { TERMINAL_AGENT_TERMINAL_SECRET: 'Env-Secret-77' } });
    expect(r.code).toBe(78);
    const body = JSON.parse(r.stdout) as { ok: boolean; problems: Array<Record<string, unknown>> };
    expect(body.ok).toBe(false);
    expect(body.problems).toEqual([
      { path: 'service.face_base_url', file: path, line: 1, message: expect.stringMatching(/is required/) as unknown },
    ]);
    expectNoSecret(r, 'Env-Secret-77');
  });

  it('a missing file exits 78 with the hint to pass --config or set TERMINAL_AGENT_CONFIG', async () => {
    const path = join(tmpDir(), 'absent.yaml');
    const r = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${path}: config file not found: pass --config PATH or set TERMINAL_AGENT_CONFIG`);
  });

  it('a YAML syntax error exits 78 with its line', async () => {
    const path = join(tmpDir(), 'c.yaml');
    writeFileSync(path, `service: [\n`);
    const r = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/c\.yaml:1: YAML syntax error/);
  });

  it('an unreadable secret file (EACCES) names the file and the fix', async () => {
    const dir = tmpDir();
    mkdirSync(join(dir, 'etc'));
    const path = join(dir, 'etc', 'c.yaml');
    let secretFile = join(dir, 'etc', 'terminal_secret');
    if (process.getuid?.() === 0) {
      // Root reads any ordinary file. A write-only sysctl file refuses reading even to root, with
      // a real EACCES from the kernel (running the CLI as another user would need the checkout to
      // be readable by that user, and Debian's node refuses setuid()).
      secretFile = '/proc/sys/vm/drop_caches';
    } else {
      writeFileSync(secretFile, 'Root-Only-Secret-31337\n');
      chmodSync(secretFile, 0o000);
    }
    writeFileSync(path, `${URLS}  terminal_secret_file: ${secretFile}\n`);
    const r = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${path}:4: service.terminal_secret_file: terminal secret file ${secretFile}`);
    expect(r.stderr).toMatch(/is not readable by this user: fix its owner\/mode/);
    expectNoSecret(r, 'Root-Only-Secret-31337');
  });

  it('a ca_file the daemon could not use exits 78 naming the key, as `run` does at start; a readable CA passes', async () => {
    const dir = tmpDir();
    const { certPath } = makeLocalhostCert(dir);
    const path = join(dir, 'c.yaml');
    const missing = join(dir, 'ca.pem');
    writeFileSync(path, `${URLS}  terminal_secret: "Inline-Secret-ca42"
  ca_file: ca.pem
state_dir: ${join(dir, 'state')}
`);
    const r = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(r.code).toBe(78);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual(['config has 1 problem:', `  ${path}: service.ca_file: cannot read ${missing} (ENOENT); give a readable PEM file or ""`]);
    // The daemon stops at the same file with the same words (before it touches anything).
    const run = await runCliProcess(['run', '--config', path], { env: {} });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(`service.ca_file: cannot read ${missing} (ENOENT)`);
    expectNoSecret(r, 'Inline-Secret-ca42');
    expectNoSecret(run, 'Inline-Secret-ca42');

    copyFileSync(certPath, missing);
    const ok = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`request +timeout 15s, 4 retries, CA ${missing}$`, 'm'));
  });

  it('--json: the console\'s certificate without its key file is a problem naming the key file', async () => {
    const dir = tmpDir();
    const { certPath } = makeLocalhostCert(dir);
    const path = join(dir, 'c.yaml');
    const keyPath = join(dir, 'gone.key');
    writeFileSync(path, `${URLS}  terminal_secret: "Inline-Secret-tls7"
console:
  tls_cert_file: ${certPath}
  tls_key_file: ${keyPath}
`);
    const r = await runCliProcess(['config', 'check', '--json', '--config', path], { env: {} });
    expect(r.code).toBe(78);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false, file: path,
      problems: [{ path: 'console.tls_key_file', file: keyPath, message: "cannot be read (ENOENT): check the path and that the agent's user may read it" }],
    });
    expectNoSecret(r, 'Inline-Secret-tls7');
  });
});

describe('terminal-agent config check: relative paths', () => {
  it('a relative --config is taken from the working directory, paths inside it from the file', async () => {
    const dir = tmpDir();
    mkdirSync(join(dir, 'etc'));
    writeFileSync(join(dir, 'etc', 'ts'), 'Rel-Secret-424242\n');
    writeFileSync(join(dir, 'etc', 'c.yaml'), `${URLS}  terminal_secret_file: ts\nstate_dir: ../state\n`);
    const r = await runCliProcess(['config', 'check', '--config', 'etc/c.yaml', '--json'], { env: {}, cwd: dir });
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as { file: string; summary: Record<string, string> };
    expect(body.file).toBe(join(dir, 'etc', 'c.yaml'));
    expect(body.summary.state_dir).toBe(join(dir, 'state'));
    expect(body.summary.terminal_secret).toBe(`set (from file ${join(dir, 'etc', 'ts')})`);
    expectNoSecret(r, 'Rel-Secret-424242');
  });
});

describe('local commands on a terminal whose secrets only the service can read', () => {
  it('`status` and `faces list --cached` get past the config and say what is really missing', async () => {
    const dir = tmpDir();
    const path = join(dir, 'c.yaml');
    writeFileSync(path, `${URLS}state_dir: ${join(dir, 'state')}\ncontrol:\n  socket: ${join(dir, 'control.sock')}\n`);
    const check = await runCliProcess(['config', 'check', '--config', path], { env: {} });
    expect(check.code).toBe(78); // the daemon itself does need the secret
    const status = await runCliProcess(['status', '--config', path], { env: {} });
    expect(status.stderr).not.toContain('configuration problem');
    expect(status.stderr).toMatch(/daemon/i);
    expect(status.code).toBe(1);
    const cached = await runCliProcess(['faces', 'list', '--cached', '--config', path], { env: {} });
    expect(cached.stderr).not.toContain('configuration problem');
    expect(cached.stderr).toContain(`no face cache at ${join(dir, 'state', 'agent.db')}`);
    expect(cached.code).toBe(1);
  });
});
