import { lookup } from 'node:dns/promises';
import { connect as tcpConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { execFile } from 'node:child_process';
import { access, constants, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { AgentConfig } from '../config/schema.js';
import type { ServiceClient } from '../client/types.js';
import { AuthError, ConfigError, NotFoundError, describeError, formatProblem } from '../errors.js';
import { readCaFile } from '../config/named-files.js';
import { ENROLL_DIR_RETRY_MS } from '../enroll/retry-interval.js';
import { ciphersFor, cpuHasAes, readCpuinfo } from '../client/tls-ciphers.js';
import { secureContextFor } from '../client/trust.js';
import { PRIVATE_CA_FIX } from '../client/error-mapping.js';
import { createDiskFloor, type DiskReading } from '../disk/disk-floor.js';
import { describeDisk } from '../disk/describe-disk.js';

// The individual `doctor` checks. Each answers one question an operator gets wrong, and says the fix.

export interface CheckResult {
  check: string;
  result: 'ok' | 'fail' | 'warn';
  detail: string;
  fix?: string;
}

const ok = (check: string, detail: string): CheckResult => ({ check, result: 'ok', detail });
const fail = (check: string, detail: string, fix: string): CheckResult => ({ check, result: 'fail', detail, fix });
const warn = (check: string, detail: string, fix?: string): CheckResult => ({ check, result: 'warn', detail, ...(fix ? { fix } : {}) });

export async function checkDns(label: string, url: URL): Promise<CheckResult> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return ok(`dns ${label}`, `${host} is an IP address`);
  try {
    const addrs = await withTimeout(lookup(host, { all: true }), 5000, 'no answer in 5s');
    return ok(`dns ${label}`, `${host} -> ${addrs.map((a) => a.address).slice(0, 3).join(', ')}`);
  } catch (err) {
    return fail(`dns ${label}`, `${host}: ${describeError(err)}`, `check /etc/resolv.conf and the network, or the host name in service.${label}`);
  }
}

/**
 * TCP for http://, a full TLS handshake with certificate check for https:// (with ca_file if set),
 * offering the ciphers in the client's order: the protocol and cipher it names are the ones the
 * agent's uploads will use (ChaCha20-Poly1305 on a CPU without AES instructions, if the service
 * follows the client's order).
 */
export async function checkConnect(label: string, url: URL, cfg: AgentConfig['service'], env: NodeJS.ProcessEnv): Promise<CheckResult> {
  const check = url.protocol === 'https:' ? `tls ${label}` : `tcp ${label}`;
  const proxy = url.protocol === 'https:' ? env.HTTPS_PROXY ?? env.https_proxy : env.HTTP_PROXY ?? env.http_proxy;
  if (proxy) return warn(check, `requests go through the proxy ${new URL(proxy).host}; direct connection not tested (the credential checks below go through it)`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  if (url.protocol !== 'https:') {
    try {
      await connectOnce(() => tcpConnect({ host, port }));
      return ok(check, `${host}:${port} accepts connections (plain http${cfg.allow_insecure_http ? ', allowed by allow_insecure_http' : ''})`);
    } catch (err) {
      return fail(check, `${host}:${port}: ${describeError(err)}`, 'check that the service is up and that no firewall blocks the port');
    }
  }
  let extraCa: string | undefined;
  if (cfg.ca_file) {
    try {
      extraCa = readCaFile(cfg.ca_file);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return fail(check, err.problems.map(formatProblem).join('; '), 'fix service.ca_file (terminal-agent config check)');
    }
  }
  try {
    const ciphers = ciphersFor(cpuHasAes(readCpuinfo()));
    // The client's own context (trust.ts): doctor trusts exactly whom the daemon trusts.
    const secureContext = secureContextFor({ extraCa, ciphers });
    const info = await connectOnce(() => tlsConnect({ host, port, servername: isIP(host) ? undefined : host, secureContext }), (s) => {
      const tls = s as ReturnType<typeof tlsConnect>;
      const cert = tls.getPeerCertificate();
      const session = `${tls.getProtocol() ?? 'TLS'} ${tls.getCipher()?.name ?? ''}`.trim();
      return `${session}, ${cert?.valid_to ? `certificate valid until ${cert.valid_to}` : 'handshake ok'}`;
    }, 'secureConnect');
    return ok(check, `${host}:${port} ${info}`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const fix = /CERT|SELF_SIGNED|VERIFY|ISSUER/.test(code)
      ? `the certificate is not trusted: ${PRIVATE_CA_FIX}, and check the clock (date)`
      : 'check that the service is up and that no firewall blocks the port';
    // Node 24 adds its own advice to a certificate's refusal ("; if the root CA is installed
    // locally, try running Node.js with --use-system-ca"): the flags are the unit's, not the
    // operator's, and the fix below says what works here.
    const what = describeError(err).replace(/; if the root CA is installed locally, try running Node\.js with\s+--use-system-ca\.?$/, '');
    return fail(check, `${host}:${port}: ${what}${code ? ` (${code})` : ''}`, fix);
  }
}

export async function checkTerminalSecret(cfg: AgentConfig, client: ServiceClient): Promise<CheckResult> {
  const check = 'credential terminal_secret';
  if (!cfg.service.terminal_secret) return fail(check, 'not set', 'set service.terminal_secret_file, $CREDENTIALS_DIRECTORY/terminal_secret or TERMINAL_AGENT_TERMINAL_SECRET');
  try {
    const faces = await client.listFaces({ retries: 0, timeoutMs: 10_000 });
    return ok(check, `accepted by ${cfg.service.face_base_url} (GET /faces: ${faces.length} face(s) in the group)`);
  } catch (err) {
    if (err instanceof AuthError) return fail(check, `refused by ${cfg.service.face_base_url} (401)`, 'the terminal secret is wrong or revoked: put the current one in the secret file');
    return fail(check, `GET /faces failed: ${describeError(err)}`, 'see the dns/tls lines above; the credential could not be tested');
  }
}

/** A DELETE of an id that cannot exist: 404 (or any 2xx) means the key was accepted, 401 that it was not. */
export async function checkApiKey(cfg: AgentConfig, client: ServiceClient): Promise<CheckResult> {
  const check = 'credential api_key';
  if (!cfg.service.api_key) return warn(check, 'not set: knowledge uploads will fail', 'set service.api_key_file, $CREDENTIALS_DIRECTORY/api_key or TERMINAL_AGENT_API_KEY');
  const probe = `terminal-agent-doctor-${randomBytes(8).toString('hex')}`;
  try {
    await client.deleteKnowledge(probe, { retries: 0, timeoutMs: 10_000 });
    return ok(check, `accepted by ${cfg.service.base_url}`);
  } catch (err) {
    if (err instanceof NotFoundError) return ok(check, `accepted by ${cfg.service.base_url} (DELETE of a made-up id: 404)`);
    if (err instanceof AuthError) return fail(check, `refused by ${cfg.service.base_url} (401)`, 'the API key is wrong or revoked: put the current one in the key file');
    return fail(check, `DELETE /knowledge/{id} failed: ${describeError(err)}`, 'see the dns/tls lines above; the credential could not be tested');
  }
}

/** The folder exists and a file can be created in it, or it can be created. */
export async function checkWritable(label: string, dir: string): Promise<CheckResult> {
  const check = `folder ${label}`;
  const fix = `give the agent's user write access: chown -R terminal-agent: ${dir} (systemd/install.sh does it), and list it in ReadWritePaths=`;
  try {
    const st = await stat(dir);
    if (!st.isDirectory()) return fail(check, `${dir} is not a folder`, `remove it or point the config elsewhere`);
    const probe = join(dir, `.doctor-${randomBytes(4).toString('hex')}.tmp`);
    await writeFile(probe, '');
    await rm(probe, { force: true });
    return ok(check, `${dir} writable`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return fail(check, `${dir}: ${describeError(err)}`, fix);
  }
  for (let p = dir; p !== dirname(p); p = dirname(p)) {
    // A link that points nowhere (a USB stick or share not mounted): nothing can be made below it.
    const link = await readlink(p).catch(() => undefined);
    if (link !== undefined && !(await stat(p).catch(() => undefined))) {
      return fail(check, `${dir} is not there: ${p} is a symlink to ${link}, which does not exist`, `mount what ${link} is on, or point the config elsewhere; the daemon retries every ${ENROLL_DIR_RETRY_MS / 1000} s`);
    }
    const parent = dirname(p);
    try {
      await access(parent, constants.W_OK);
      return ok(check, `${dir} absent; the daemon creates it (parent ${parent} writable)`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') break;
    }
  }
  return fail(check, `${dir} absent and cannot be created`, `mkdir -p ${dir} && chown terminal-agent: ${dir}`);
}

export async function checkProgram(name: string, args: string[], env: NodeJS.ProcessEnv, fix: string): Promise<CheckResult> {
  const r = await run(name, args, env, 5000);
  if (r.error?.code === 'ENOENT') return fail(`program ${name}`, 'not found on PATH', fix);
  return ok(`program ${name}`, r.stdout.split('\n')[0]?.trim() || r.stderr.split('\n')[0]?.trim() || 'present');
}

export async function checkOutputDevice(device: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  // 50 ms of silence: opens, configures and drains the device without an audible click.
  const r = await run('aplay', ['-q', '-D', device, '-t', 'raw', '-f', 'S16_LE', '-r', '16000', '-c', '1'], env, 5000, Buffer.alloc(1600));
  return deviceResult('audio output', device, r, 'aplay -L', 'audio.output_device');
}

export async function checkInputDevice(device: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  const r = await run('arecord', ['-q', '-D', device, '-t', 'raw', '-f', 'S16_LE', '-r', '16000', '-c', '1', '-s', '800', '/dev/null'], env, 5000);
  return deviceResult('audio input', device, r, 'arecord -L', 'audio.input_device');
}

function deviceResult(check: string, device: string, r: RunResult, list: string, key: string): CheckResult {
  if (r.error?.code === 'ENOENT') return fail(check, `${r.program} not found`, 'apt-get install alsa-utils');
  if (r.code === 0) return ok(check, `${device} opens`);
  const why = (r.stderr.trim().split('\n').pop() ?? '').slice(0, 200) || (r.timedOut ? 'no answer in 5s' : `exit ${r.code}`);
  const busy = /busy/i.test(why) ? ' (a running daemon or another program may hold it)' : '';
  return fail(check, `${device} cannot be opened: ${why}${busy}`, `list the devices with '${list}', set ${key}, and check that the agent's user is in the audio group`);
}

interface RunResult {
  program: string;
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  error?: NodeJS.ErrnoException;
}

function run(program: string, args: string[], env: NodeJS.ProcessEnv, timeout: number, input?: Buffer): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(program, args, { env, timeout, encoding: 'utf8' }, (error, stdout, stderr) => {
      const e = error as (NodeJS.ErrnoException & { killed?: boolean; code?: unknown }) | null;
      resolve({
        program, stdout, stderr,
        code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
        timedOut: Boolean(e?.killed),
        ...(e && e.code === 'ENOENT' ? { error: e } : {}),
      });
    });
    child.stdin?.on('error', () => {});
    child.stdin?.end(input);
  });
}

function connectOnce<S extends Socket>(open: () => S, describe?: (s: S) => string, event: 'connect' | 'secureConnect' = 'connect'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = open();
    const done = (err?: Error) => {
      clearTimeout(timer);
      const info = !err && describe ? describe(s) : '';
      s.destroy();
      if (err) reject(err);
      else resolve(info);
    };
    const timer = setTimeout(() => done(new Error('no answer in 5s')), 5000);
    s.once(event, () => done());
    s.once('error', (err) => done(err));
  });
}

async function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(message)), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}


/** Free space on state_dir against state_min_free: below it the caches have stopped. */
export async function checkDiskFloor(cfg: Pick<AgentConfig, 'state_dir' | 'state_min_free'>): Promise<CheckResult> {
  let r: DiskReading;
  try {
    r = await createDiskFloor(cfg.state_dir, cfg.state_min_free).read();
  } catch (err) {
    return warn('free space', `cannot measure the file system of ${cfg.state_dir}: ${describeError(err)}`);
  }
  const fix = `free space on the file system of ${cfg.state_dir}, or lower state_min_free`;
  if (r.nearly_full) return fail('free space', describeDisk(r), fix);
  if (r.free_bytes < 2 * r.min_free_bytes) return warn('free space', `disk getting full: ${describeDisk(r)}`, fix);
  return ok('free space', describeDisk(r));
}

/**
 * Whether the face check can run: its worker starts, loads the runtime and the model, and measures
 * a plain grey image (no face) within the time an upload would wait.
 */
export async function checkFaceCheck(settings: AgentConfig['enroll']['face_check']): Promise<CheckResult> {
  const check = 'face check';
  if (settings.mode === 'off') return warn(check, 'enroll.face_check.mode is off: face images are uploaded without looking for a face', 'set enroll.face_check.mode: refuse (the default) to keep group photos, blurred and dark shots out of the group');
  const [{ createFaceChecker }, { default: sharp }] = await Promise.all([import('../facecheck/index.js'), import('sharp')]);
  const checker = createFaceChecker({ timeoutMs: 30_000 });
  const started = performance.now();
  try {
    const probe = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } }).png().toBuffer();
    const m = await checker.check(probe);
    const ms = Math.round(performance.now() - started);
    if (m.faces.length > 0) return fail(check, `the detector found a face in a plain grey image (model in ${checker.modelDir})`, 'reinstall the package: the model files are not the ones it shipped');
    return ok(check, `mode ${settings.mode}: the face detector loaded from ${checker.modelDir} and answered in ${ms} ms`);
  } catch (err) {
    return fail(check, `the face check cannot run: ${describeError(err)}`, `reinstall the package (the model lives in ${checker.modelDir}), or set enroll.face_check.mode: off to upload face images unchecked`);
  } finally {
    await checker.stop();
  }
}
