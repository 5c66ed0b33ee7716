import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { controlClient } from '../../src/control/control-client.js';
import { DaemonError } from '../../src/errors.js';
import { runCliProcess } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import type { Emulator } from '../helpers/emulator.js';
import { json, startHostileService } from '../helpers/hostile-service.js';
import { daemonFiles, isReady, spawnDaemon } from '../daemon/daemon-harness.js';

// A daemon that stops, crashes or restarts while a CLI call waits on its control socket. The
// servers here are fakes of such a daemon: they accept the connection, then close it (after
// reading the request, as a daemon killed mid-work; or at once, unread, which the client sees as
// a reset) without a byte of answer.

const servers: Server[] = [];
const connections = new Set<Socket>();
afterEach(async () => {
  for (const c of connections) c.destroy();
  connections.clear();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A fake crashed daemon: closes each connection once the request came (or at once, `unread`). */
async function crashingDaemon(dir: string, unread = false): Promise<string> {
  const path = join(dir, 'ctl.sock');
  const server = createServer({ pauseOnConnect: unread }, (s) => {
    connections.add(s);
    s.on('error', () => undefined);
    // Closed with the request still in its buffer: the kernel resets the client's end.
    if (unread) setTimeout(() => s.destroy(), 100);
    // The CLI's probe (connect, then close) sends nothing: only a request is answered by a close.
    else s.once('data', () => s.destroy());
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(path, r));
  return path;
}

describe('a control call the daemon closes without answering', () => {
  it('says so, points at the service logs, and for a POST that it may have taken effect', async () => {
    const socket = await crashingDaemon(tmpDir());
    const get = await controlClient(socket).status().catch((e: unknown) => e);
    expect(get).toBeInstanceOf(DaemonError);
    expect((get as DaemonError).code).toBe('TA_ERR_DAEMON');
    expect((get as Error).message).toMatch(/^the daemon closed the connection on .*ctl\.sock without answering GET \/status: it most likely stopped, crashed or restarted/);
    expect((get as Error).message).toMatch(/'systemctl status terminal-agent' and 'journalctl -u terminal-agent'.*nothing was changed/);
    expect((get as Error).message).not.toMatch(/HTTP$|not HTTP/);

    const post = await controlClient(socket).enrollVoiceprint({ name: 'ann' }).catch((e: unknown) => e);
    expect((post as Error).message).toMatch(/without answering POST \/voiceprint\/enroll: .*the request may have taken effect before that: .*'terminal-agent voiceprint list'/);
    expect((post as DaemonError).details).toEqual({ socket, request: 'POST /voiceprint/enroll', may_have_taken_effect: true });
  });

  it('says the same when the connection is reset with the request unread', async () => {
    const socket = await crashingDaemon(tmpDir(), true);
    const err = await controlClient(socket).say({ text: 'hello' }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^the daemon closed the connection on .* without answering POST \/say: .*the phrase may have been spoken/);
  });

  it('the CLI prints it and exits 1, as a text line or as the JSON error line with --json', async () => {
    const dir = tmpDir();
    const socket = await crashingDaemon(dir);
    const config = join(dir, 'config.yaml');
    // Service URLs where nothing listens: these commands only talk to the (fake) daemon.
    writeFileSync(config, ['service:', '  base_url: http://127.0.0.1:9', '  face_base_url: http://127.0.0.1:9/v1/api',
      '  terminal_secret: "s"', '  api_key: "k"', `state_dir: ${join(dir, 'state')}`, 'control:', `  socket: ${socket}`, ''].join('\n'));

    const status = await runCliProcess(['status', '--config', config], { cwd: dir });
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(/^terminal-agent: the daemon closed the connection on .* without answering GET \/status: it most likely stopped, crashed or restarted meanwhile; see 'systemctl status terminal-agent' and 'journalctl -u terminal-agent'\. nothing was changed.* \[TA_ERR_DAEMON\]\n$/);

    const say = await runCliProcess(['say', 'hello', '--json', '--config', config], { cwd: dir });
    expect(say.code).toBe(1);
    expect(say.stdout).toBe('');
    const line = JSON.parse(say.stderr) as Record<string, unknown>;
    expect(line).toMatchObject({ code: 'TA_ERR_DAEMON', request: 'POST /say', may_have_taken_effect: true });
    expect(line.error).toMatch(/without answering POST \/say: .*the request may have taken effect/);
  });

  it('a real daemon killed (SIGKILL) while `faces sync` waits for it: the CLI says the daemon closed the connection and the sync may have run', async () => {
    // The service answers the daemon's first listing (its sync after start) and holds the next
    // one open: that request is the daemon working on the CLI's POST /faces/sync.
    const svc = await startHostileService((path) => path !== '/v1/api/faces' ? undefined
      : svc.requests.filter((r) => r.path === path).length === 1 ? (_q, res) => json(res, []) : () => new Promise(() => undefined));
    const files = daemonFiles(tmpDir('ta-killed-'), { baseUrl: svc.url, faceBaseUrl: svc.faceBaseUrl, terminals: [{ terminal_secret: TEST_TERMINAL_SECRET, group_id: 'g' }], apiKey: 'k' } as unknown as Emulator, { logLevel: 'debug' });
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    await d.waitLog((l) => l.msg === 'face sync done', 10_000, 'the first face sync');
    const cli = runCliProcess(['faces', 'sync', '--json', '--config', files.configPath], { timeoutMs: 20_000 });
    for (let i = 0; i < 200 && svc.requests.filter((r) => r.path === '/v1/api/faces').length < 2; i++) await sleep(50);
    expect(svc.requests.filter((r) => r.path === '/v1/api/faces')).toHaveLength(2);
    d.signal('SIGKILL');
    const r = await cli;
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const line = JSON.parse(r.stderr) as Record<string, unknown>;
    expect(line).toMatchObject({ code: 'TA_ERR_DAEMON', request: 'POST /faces/sync', may_have_taken_effect: true, socket: files.socketPath });
    expect(line.error).toBe(`the daemon closed the connection on ${files.socketPath} without answering POST /faces/sync: it most likely stopped, crashed or restarted meanwhile; see 'systemctl status terminal-agent' and 'journalctl -u terminal-agent'. the request may have taken effect before that: the sync may have run in whole or in part: 'terminal-agent status' shows the last face sync once the daemon runs again`);
  });
});

