import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { hashPassword } from '../../src/util/password-hash.js';
import { readFileSync, readdirSync, readlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parsePasswordHash, verifyPassword } from '../../src/util/password-hash.js';
import { runCliProcess } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';

// The console's switches, through the real CLI: off unless configured, never open to the network
// without a password, and the hash-password command.

function lineOf(file: string, needle: string): number {
  return readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(needle)) + 1;
}

/** TCP sockets in LISTEN state that process `pid` holds (from /proc, IPv4 and IPv6). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A' && inodes.has(cols[9]!)) ports.push(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

describe('web console configuration', () => {
  it('is off by default: no TCP port, no console module, no libvips', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-console-off-'), emulator);
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady, 20_000, 'ready');
    expect(d.logs().some((l) => l.component === 'console')).toBe(false);
    expect(listeningPorts(d.pid)).toEqual([]);
    expect(readFileSync(`/proc/${d.pid}/maps`, 'utf8')).not.toMatch(/libvips|sharp/);
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });

  it('listens on loopback when console.listen says so, and only there', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-console-on-'), emulator, { extra: 'console:\n  listen: 127.0.0.1:0' });
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady, 20_000, 'ready');
    const line = await d.waitLog((l) => l.msg === 'web console listening', 5000, 'console listening');
    expect(line.login_required).toBe(false);
    const port = Number(new URL(String(line.url)).port);
    expect(listeningPorts(d.pid)).toEqual([port]);
    const res = await fetch(new URL('/api/session', String(line.url)));
    expect(await res.json()).toMatchObject({ authenticated: true, login_required: false, csrf_token: expect.any(String) });
    // Without a login, a Host that is a name (DNS rebinding) is refused.
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      request(String(line.url), { headers: { host: 'attacker.example' } }, (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
      }).on('error', reject).end();
    });
    expect(status).toBe(403);
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });

  it('refuses to listen beyond loopback without a password: config check and run exit 78 with file:line', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-console-open-'), emulator, { extra: 'console:\n  listen: 0.0.0.0:0' });
    const line = lineOf(files.configPath, 'listen: 0.0.0.0:0');
    const check = await runCliProcess(['config', 'check', '--config', files.configPath]);
    expect(check.code).toBe(78);
    expect(check.stderr).toContain(`${files.configPath}:${line}: console.listen: 0.0.0.0:0 lets other machines reach the web console, which then needs a login`);
    expect(check.stderr).toMatch(/console hash-password/);
    const run = await runCliProcess(['run', '--config', files.configPath]);
    expect(run.code).toBe(78);
    expect(run.stderr + run.stdout).toMatch(/console\.listen/);
  });

  it('takes the password as a hash in the config or as a systemd credential, never as plain text', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-console-pw-');
    const plain = daemonFiles(join(dir, 'a'), emulator, { extra: 'console:\n  listen: 0.0.0.0:0\n  password_hash: hunter2hunter2' });
    const bad = await runCliProcess(['config', 'check', '--config', plain.configPath]);
    expect(bad.code).toBe(78);
    expect(bad.stderr).toContain(`${plain.configPath}:${lineOf(plain.configPath, 'password_hash')}: console.password_hash: is not a password hash`);

    const made = await runCliProcess(['console', 'hash-password'], { input: 'a good console password\n' });
    expect(made.code).toBe(0);
    const hash = made.stdout.trim();
    const parsed = parsePasswordHash(hash);
    expect(parsed).toBeDefined();
    expect(await verifyPassword('a good console password', parsed!)).toBe(true);
    expect(await verifyPassword('a good console password\n', parsed!)).toBe(false);
    expect((await runCliProcess(['console', 'hash-password'], { input: '' })).code).toBe(64);

    const hashed = daemonFiles(join(dir, 'b'), emulator, { extra: `console:\n  listen: 0.0.0.0:0\n  password_hash: "${hash}"` });
    const ok = await runCliProcess(['config', 'check', '--config', hashed.configPath]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/console\s+0\.0\.0\.0:0, login by password_hash/);

    const creds = join(dir, 'creds');
    mkdirSync(creds);
    writeFileSync(join(creds, 'console_password'), 'from a credential\n', { mode: 0o600 });
    const open = daemonFiles(join(dir, 'c'), emulator, { extra: 'console:\n  listen: 0.0.0.0:0' });
    const viaCred = await runCliProcess(['config', 'check', '--config', open.configPath], { env: { CREDENTIALS_DIRECTORY: creds } });
    expect(viaCred.code).toBe(0);
    expect(viaCred.stdout).toContain(`login by systemd credential ${join(creds, 'console_password')}`);
  });

  it('config check and doctor report an empty or unreadable console_password credential, which would stop the daemon', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-console-cred-');
    const creds = join(dir, 'creds');
    mkdirSync(creds);
    const cred = join(creds, 'console_password');
    writeFileSync(cred, '\n', { mode: 0o600 });
    const files = daemonFiles(join(dir, 'agent'), emulator, { extra: 'console:\n  listen: 0.0.0.0:0' });
    const env = { CREDENTIALS_DIRECTORY: creds };
    const check = await runCliProcess(['config', 'check', '--config', files.configPath], { env });
    expect(check.code).toBe(78);
    expect(check.stderr).toContain(`console.password_hash: the console_password credential ${cred} is empty: put the console password`);
    // The credential is what to fix, not the missing login.
    expect(check.stderr).not.toContain('needs a login');
    const doctor = await runCliProcess(['doctor', '--config', files.configPath], { env });
    expect(doctor.code).toBe(78);
    expect(doctor.stderr + doctor.stdout).toContain(`the console_password credential ${cred} is empty`);
    const run = await runCliProcess(['run', '--config', files.configPath], { env });
    expect(run.code).toBe(78);
    expect(run.stderr + run.stdout).toContain(`the console_password credential ${cred} is empty`);

    // Not a file (an operator's LoadCredential= pointed at a folder): named, with the reason.
    const asDir = join(dir, 'creds2');
    mkdirSync(join(asDir, 'console_password'), { recursive: true });
    const unreadable = await runCliProcess(['config', 'check', '--config', files.configPath], { env: { CREDENTIALS_DIRECTORY: asDir } });
    expect(unreadable.code).toBe(78);
    expect(unreadable.stderr).toContain(`the console_password credential ${join(asDir, 'console_password')} cannot be read (EISDIR)`);

    // With the console off the credential is not used, and not a problem.
    const off = daemonFiles(join(dir, 'off'), emulator);
    expect((await runCliProcess(['config', 'check', '--config', off.configPath], { env })).code).toBe(0);
  });

  it('serves https with a configured certificate: Secure __Host- cookie and HSTS', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-console-https-');
    // A self-signed certificate made by Debian's openssl, as an operator would for a LAN address.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    const hash = await hashPassword('tls console password', { ln: 10, r: 8, p: 1 });
    const files = daemonFiles(join(dir, 'agent'), emulator, {
      extra: ['console:', '  listen: 127.0.0.1:0', `  password_hash: "${hash}"`, `  tls_cert_file: ${join(dir, 'cert.pem')}`, `  tls_key_file: ${join(dir, 'key.pem')}`].join('\n'),
    });
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady, 20_000, 'ready');
    const url = String((await d.waitLog((l) => l.msg === 'web console listening', 5000, 'console listening')).url);
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    const body = JSON.stringify({ password: 'tls console password' });
    const res = await new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpsRequest(new URL('/api/login', url), { method: 'POST', ca: readFileSync(join(dir, 'cert.pem')), headers: { 'content-type': 'application/json', 'content-length': String(body.length) } }, (r) => {
        r.resume();
        resolve({ status: r.statusCode ?? 0, headers: r.headers });
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(res.status).toBe(200);
    expect(String(res.headers['set-cookie'])).toMatch(/^__Host-ta_session=[\w-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
    expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });

  it('refuses half a TLS setup', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-console-tls-'), emulator, { extra: 'console:\n  listen: 127.0.0.1:0\n  tls_cert_file: cert.pem' });
    const check = await runCliProcess(['config', 'check', '--config', files.configPath]);
    expect(check.code).toBe(78);
    expect(check.stderr).toMatch(/tls_cert_file and tls_key_file go together/);
  });
});
