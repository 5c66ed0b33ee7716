import { afterEach, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../../src/log/logger.js';
import { createJournalDestination, journalTarget } from '../../src/log/journal-destination.js';
import { decodeJournalEntry, encodeJournalEntry, fieldName, priorityOf } from '../../src/log/journal-format.js';
import { AuthError } from '../../src/errors.js';
import { needMountNamespace, tmpDir } from '../helpers/tmp.js';
import { CLI_ENTRY } from '../helpers/cli.js';
import { runCliInPty } from '../helpers/pty.js';
import { startTestEmulator } from '../helpers/emulator.js';

// What journald would receive: a unix datagram socket bound here stands in for
// /run/systemd/journal/socket (journald itself cannot run in this container, see the note), and
// every datagram is parsed with the native protocol's rules, the binary form included.

interface DgramSocket {
  bind(path: string): void;
  on(event: 'message', l: (buf: Buffer) => void): void;
  on(event: 'error' | 'listening', l: (e?: Error) => void): void;
  close(): void;
}
const require = createRequire(import.meta.url);
const unixDgram = require('unix-dgram') as { createSocket(t: 'unix_dgram', l?: (b: Buffer) => void): DgramSocket };

const open: DgramSocket[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

function fakeJournal(): { path: string; raw: Buffer[]; entries: () => Array<Record<string, string>> } {
  const path = join(tmpDir('ta-journal-'), 'socket');
  const raw: Buffer[] = [];
  const sock = unixDgram.createSocket('unix_dgram', (buf) => raw.push(Buffer.from(buf)));
  sock.on('error', () => {});
  sock.bind(path);
  open.push(sock);
  return { path, raw, entries: () => raw.map(decodeJournalEntry) };
}

async function until(cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(10);
  }
}

/** A daemon config whose terminal secret the emulator does not know (a refused credential to log). */
function agentConfig(emulator: { baseUrl: string; faceBaseUrl: string }): string {
  const dir = tmpDir('ta-journal-');
  const config = join(dir, 'config.yaml');
  writeFileSync(config, [
    'service:', `  base_url: ${emulator.baseUrl}`, `  face_base_url: ${emulator.faceBaseUrl}`, `  terminal_secret: ${SECRET}`, '  retries: 0',
    `state_dir: ${join(dir, 'state')}`, 'control:', `  socket: ${join(dir, 'ctl.sock')}`,
  ].join('\n'));
  return config;
}

const SECRET = 'ts_live_9f8e7d6c5b4a39281706';

describe('journald native protocol', () => {
  it('encodes single-line fields as KEY=value and multi-line ones with a 64-bit length', () => {
    const buf = encodeJournalEntry([['MESSAGE', 'hello'], ['ERR_STACK', 'line one\nline two'], ['FILE', 'faces/a=b.jpg']]);
    const stackAt = buf.indexOf('ERR_STACK\n');
    expect(buf.subarray(0, stackAt).toString()).toBe('MESSAGE=hello\n');
    expect(buf.readBigUInt64LE(stackAt + 10)).toBe(17n);
    expect(decodeJournalEntry(buf)).toEqual({ MESSAGE: 'hello', ERR_STACK: 'line one\nline two', FILE: 'faces/a=b.jpg' });
  });

  it('encodes one-line entries, non-ASCII included, as the same bytes KEY=value by KEY=value, and cuts values over 16 KiB', () => {
    const fields: Array<[string, string]> = [['MESSAGE', 'enrollment file done'], ['NAME', 'Zoë 李 🙂'], ['FILE', 'faces/Zoë.jpg']];
    const buf = encodeJournalEntry(fields);
    expect(buf.equals(Buffer.from(fields.map(([k, v]) => `${k}=${v}\n`).join(''), 'utf8'))).toBe(true);
    expect(decodeJournalEntry(buf)).toEqual(Object.fromEntries(fields));
    const long = encodeJournalEntry([['MESSAGE', 'x'], ['ERR', 'é'.repeat(10_000)]]);
    expect(decodeJournalEntry(long).ERR).toBe(`${'é'.repeat(8192)}...[cut]`);
  });

  it('maps levels to syslog priorities and keys to journal field names', () => {
    expect(['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map(priorityOf)).toEqual([2, 3, 4, 6, 7, 7]);
    expect([60, 50, 40, 30, 20].map(priorityOf)).toEqual([2, 3, 4, 6, 7]);
    expect(['component', 'err_code', 'face_id', 'file', 'retryAt', '_x', 'a-b'].map(fieldName)).toEqual(['COMPONENT', 'CODE', 'FACE_ID', 'FILE', 'RETRY_AT', 'X', 'A_B']);
  });
});

describe('the daemon logger under systemd', () => {
  it('sends each entry with PRIORITY, a MESSAGE sentence and filterable fields, secrets scrubbed in every field', async () => {
    const j = fakeJournal();
    const stdout: string[] = [];
    const dest = createJournalDestination({ socketPath: j.path, fallback: { write: (t) => stdout.push(t) } });
    const logger = createLogger({ level: 'debug', destination: dest, secrets: () => [SECRET] });
    const enroll = logger.child({ component: 'enroll' });
    enroll.warn({ kind: 'faces', name: 'ada', file: 'faces/ada.jpg', code: 'TA_ERR_BAD_INPUT', err: `rejected (secret ${SECRET})` }, 'enrollment file failed');
    const err = new AuthError(`the service refused the terminal secret ${SECRET}`, { status: 401 });
    logger.child({ component: 'faces' }).error({ err, face_id: 'a'.repeat(32) }, 'face sync stopped');
    logger.info('terminal-agent is ready');
    logger.debug({ detail: { nested: SECRET } }, 'debugging');

    await until(() => j.raw.length === 4);
    const [warn, error, info, debug] = j.entries();
    expect(warn).toMatchObject({ PRIORITY: '4', COMPONENT: 'enroll', CODE: 'TA_ERR_BAD_INPUT', FILE: 'faces/ada.jpg', KIND: 'faces', NAME: 'ada', SYSLOG_IDENTIFIER: 'terminal-agent' });
    expect(warn!.MESSAGE).toBe('enrollment file failed: rejected (secret [REDACTED])');
    expect(error).toMatchObject({ PRIORITY: '3', COMPONENT: 'faces', CODE: 'TA_ERR_AUTH', FACE_ID: 'a'.repeat(32) });
    expect(error!.MESSAGE).toBe('face sync stopped: the service refused the terminal secret [REDACTED]');
    expect(error!.ERR_STACK!.split('\n').length).toBeGreaterThan(2); // sent in the binary form
    expect(info).toMatchObject({ PRIORITY: '6', MESSAGE: 'terminal-agent is ready' });
    expect(debug).toMatchObject({ PRIORITY: '7', DETAIL: '{"nested":"[REDACTED]"}' });
    for (const buf of j.raw) expect(buf.includes(SECRET)).toBe(false);
    expect(stdout).toEqual([]);
    expect(dest.mode()).toBe('native');
    dest.close();
  });

  it('falls back to <N>-prefixed lines on stdout when the journal socket cannot be used', () => {
    const stdout: string[] = [];
    const dest = createJournalDestination({ socketPath: join(tmpDir('ta-journal-'), 'missing'), fallback: { write: (t) => stdout.push(t) } });
    const logger = createLogger({ destination: dest, secrets: () => [SECRET] });
    logger.child({ component: 'enroll' }).warn({ code: 'TA_ERR_BAD_INPUT', file: 'faces/x y.jpg', err: SECRET }, 'enrollment file failed');
    logger.error('disk full');
    expect(stdout).toEqual([
      '<4>enrollment file failed: [REDACTED] ERR=[REDACTED] COMPONENT=enroll CODE=TA_ERR_BAD_INPUT FILE="faces/x y.jpg"\n',
      '<3>disk full\n',
    ]);
    expect(dest.mode()).toBe('stream');
  });

  it('is chosen only under systemd: JOURNAL_STREAM naming stdout, a service with the socket, or log.format', () => {
    const j = fakeJournal();
    const env = { TERMINAL_AGENT_JOURNAL_SOCKET: j.path };
    const file = join(tmpDir('ta-journal-'), 'out');
    writeFileSync(file, '');
    expect(journalTarget('auto', env, 1)).toBeUndefined();
    expect(journalTarget('auto', { ...env, JOURNAL_STREAM: '1:2' }, 1)).toBeUndefined();
    expect(journalTarget('journal', env, 1)).toEqual({ socketPath: j.path });
    expect(journalTarget('json', { ...env, INVOCATION_ID: 'x' }, undefined)).toBeUndefined();
    expect(journalTarget('auto', { ...env, INVOCATION_ID: 'x' }, undefined)).toEqual({ socketPath: j.path });
    expect(journalTarget('journal', {}, 1)).toEqual({ socketPath: undefined }); // this container has no journald
  });

  it('a real daemon started with JOURNAL_STREAM naming its stdout logs to the journal socket, and nothing as JSON', async () => {
    const j = fakeJournal();
    const emulator = await startTestEmulator();
    const config = agentConfig(emulator);
    // As systemd does: JOURNAL_STREAM is the device:inode of the stdout it connected (here a pipe).
    const child = spawn('/bin/sh', ['-c', `JOURNAL_STREAM=$(stat -L -c %d:%i /proc/$$/fd/1) exec "${process.execPath}" "${CLI_ENTRY}" run --config "${config}"`], {
      env: { PATH: process.env.PATH, TERMINAL_AGENT_JOURNAL_SOCKET: j.path },
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    try {
      const end = Date.now() + 15_000;
      while (!j.entries().some((e) => e.CODE === 'TA_ERR_AUTH') || !j.entries().some((e) => e.MESSAGE === 'terminal-agent is ready')) {
        if (Date.now() > end) throw new Error(`journal got: ${j.entries().map((e) => e.MESSAGE).join(' | ')}; stdout: ${stdout}`);
        await sleep(50);
      }
      const ready = j.entries().find((e) => e.MESSAGE === 'terminal-agent is ready')!;
      expect(ready).toMatchObject({ PRIORITY: '6', COMPONENT: 'daemon', SYSLOG_IDENTIFIER: 'terminal-agent' });
      // The secret is unknown to the emulator: face sync is refused, at priority err, with its code.
      const refused = j.entries().find((e) => e.CODE === 'TA_ERR_AUTH')!;
      expect(refused).toMatchObject({ PRIORITY: '3', COMPONENT: 'faces' });
      expect(refused.MESSAGE).toMatch(/terminal_secret/);
      for (const buf of j.raw) expect(buf.includes(SECRET)).toBe(false);
      expect(stdout).toBe('');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await emulator.close();
    }
    await until(() => j.entries().at(-1)?.MESSAGE === 'stopped');
    expect(j.entries().at(-1)).toMatchObject({ MESSAGE: 'stopped', PRIORITY: '6' });
  });

  it('a real daemon run as a service with stdout on /dev/null (StandardOutput=null) logs to the journal socket', async () => {
    // /dev/null is a character device, as a terminal is: it was taken for one, and every line went
    // to /dev/null instead of the journal.
    const j = fakeJournal();
    const emulator = await startTestEmulator();
    const child = spawn(process.execPath, [CLI_ENTRY, 'run', '--config', agentConfig(emulator)], {
      env: { PATH: process.env.PATH, INVOCATION_ID: 'f00dfeed0123456789abcdef01234567', TERMINAL_AGENT_JOURNAL_SOCKET: j.path },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      await until(() => j.entries().some((e) => e.MESSAGE === 'terminal-agent is ready'));
      expect(j.entries().find((e) => e.MESSAGE === 'terminal-agent is ready')).toMatchObject({ PRIORITY: '6', COMPONENT: 'daemon' });
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await emulator.close();
    }
  });

  it('a service whose stdout is a terminal writes JSON lines there, not to the journal socket', async () => {
    const j = fakeJournal();
    const emulator = await startTestEmulator();
    try {
      // On a pseudo-terminal (script(1), helpers/pty.ts), ended after 3 s.
      const r = await runCliInPty(['run', '--config', agentConfig(emulator)], {
        INVOCATION_ID: 'f00dfeed0123456789abcdef01234567', TERMINAL_AGENT_JOURNAL_SOCKET: j.path,
      }, 'timeout -s TERM 3');
      expect(r.output).toMatch(/"msg":"terminal-agent is ready"/);
      expect(j.raw).toHaveLength(0);
    } finally {
      await emulator.close();
    }
  });

  it('under a real systemd-journald, journalctl shows sentences, filters by priority and by field, and no secret', async () => {
    // systemd-journald runs in a private mount namespace (unshare -m, as root; a tmpfs over /run):
    // the host's /run is not touched. See real-journald.sh.
    needMountNamespace('run systemd-journald apart from the host (a tmpfs over /run)');
    const emulator = await startTestEmulator();
    const config = agentConfig(emulator);
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn('unshare', ['-m', join(import.meta.dirname, 'real-journald.sh'), process.execPath, CLI_ENTRY, config]);
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (t: string) => (text += t));
      child.stderr.setEncoding('utf8').on('data', (t: string) => (text += t));
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`real-journald.sh exited ${code}: ${text}`))));
    });
    const section = (name: string) => {
      const body = out.split(`--- ${name}\n`)[1]!.split('\n--- ')[0]!;
      return body.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, string>);
    };
    const all = section('all');
    expect(all.map((e) => e.MESSAGE)).toContain('terminal-agent is ready');
    expect(all.find((e) => e.MESSAGE === 'terminal-agent is ready')).toMatchObject({ PRIORITY: '6', COMPONENT: 'daemon', _TRANSPORT: 'journal' });
    // journalctl -p warning: only warnings and worse, among them the refused credential.
    const warnings = section('warning');
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.every((e) => Number(e.PRIORITY) <= 4)).toBe(true);
    expect(warnings.some((e) => e.CODE === 'TA_ERR_AUTH' && e.PRIORITY === '3')).toBe(true);
    // journalctl COMPONENT=faces: that component's entries only.
    const faces = section('faces');
    expect(faces.length).toBeGreaterThan(0);
    expect(faces.every((e) => e.COMPONENT === 'faces')).toBe(true);
    expect(out).not.toContain(SECRET);
    expect(out.split('--- stdout\n')[1]!.split('--- end')[0]!.trim()).toBe('');
  });
});
