import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { makeTestAlsa, type TestAlsa } from '../helpers/alsa.js';
import { runCliProcess } from '../helpers/cli.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { connectControl, tryConnectControl } from '../../src/control/control-client.js';
import { DaemonError, UsageError } from '../../src/errors.js';
import type { AgentStatus } from '../../src/control/types.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';

// One daemon process for the whole file (starting one costs seconds on a Pi-class machine); each
// test asks it something different over its control socket, as an operator's program would.

let emulator: Emulator;
let tmp: { dir: string; remove(): void };
let files: DaemonFiles;
let daemon: DaemonProcess;
let alsa: TestAlsa;

describe('the control socket of a running daemon', () => {
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0 });
    emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Ada', image: faceImagePng([200, 150, 100]) }, { name: 'Alan', image: faceImagePng([100, 150, 200]) }]);
    tmp = tmpDirManual('ta-ctl-');
    alsa = makeTestAlsa(tmp.dir);
    files = daemonFiles(join(tmp.dir, 'agent'), emulator, { outputDevice: alsa.device });
    daemon = spawnDaemon(files.configPath, { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH });
    await daemon.waitLog(isReady);
    await daemon.waitLog((l) => l.msg === 'face sync done');
  });
  afterAll(async () => {
    daemon?.signal('SIGTERM');
    await daemon?.exited;
    await emulator?.close();
    tmp?.remove();
  });

  it('is a socket with mode 0660', () => {
    const st = statSync(files.socketPath);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o660);
  });

  it('GET /status reports uptime, the last sync, the outbox and audio, with no secret', async () => {
    const res = await controlRequest(files.socketPath, 'GET', '/status');
    expect(res.status).toBe(200);
    const s = res.json() as AgentStatus;
    expect(s).toMatchObject({ pid: daemon.pid, state: 'running', state_dir: files.stateDir, faces: { cached: 2, last_sync: { ok: true, added: 2 } } });
    expect(s.uptime_s).toBeGreaterThanOrEqual(0);
    expect(s.audio.output_device).toBe(alsa.device);
    expect(Object.keys(s.components)).toEqual(['faces', 'speech', 'voice', 'enroll']);
    expect(res.text).not.toContain(emulator.terminals[0]!.terminal_secret);
    expect(res.text).not.toContain(emulator.apiKey);
  });

  it('GET /faces lists the cache and POST /faces/sync runs a sync', async () => {
    const faces = (await controlRequest(files.socketPath, 'GET', '/faces')).json() as Array<{ name: string }>;
    expect(faces.map((f) => f.name).sort()).toEqual(['Ada', 'Alan']);
    const before = emulator.requests.filter((r) => r.path === '/v1/api/faces').length;
    const res = await controlRequest(files.socketPath, 'POST', '/faces/sync');
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, reason: 'manual' });
    expect(emulator.requests.filter((r) => r.path === '/v1/api/faces').length).toBe(before + 1);
  });

  it('POST /say plays through the daemon to the audio device', async () => {
    const res = await controlRequest(files.socketPath, 'POST', '/say', { text: 'hello terminal' });
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ outcome: 'played' });
    expect((await alsa.waitPlayed(1000)).length).toBeGreaterThan(1000);
  });

  it('GET /metrics is Prometheus text with sync, outbox, HTTP, TTS and process figures', async () => {
    const res = await controlRequest(files.socketPath, 'GET', '/metrics');
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toContain('text/plain');
    for (const name of [
      'terminal_agent_http_requests_total{operation=',
      'terminal_agent_http_request_duration_seconds_bucket',
      'terminal_agent_outbox_items',
      'terminal_agent_face_last_ok_sync_timestamp_seconds',
      'terminal_agent_faces_cached_count 2',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) expect(res.text).toContain(name);
    expect(res.text).toMatch(/^terminal_agent_(tts|speech)_\w+/m);
    // Every family appears once: component and daemon registries never overlap.
    const families = res.text.split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]);
    expect(new Set(families).size).toBe(families.length);
  });

  it('answers errors as JSON with the error code and a fitting HTTP status', async () => {
    const cases: Array<[string, string, unknown, number, string]> = [
      ['GET', '/nope', undefined, 404, 'TA_ERR_USAGE'],
      ['POST', '/status', undefined, 405, 'TA_ERR_USAGE'],
      ['POST', '/say', '{not json', 400, 'TA_ERR_USAGE'],
      ['POST', '/say', { text: '' }, 400, 'TA_ERR_USAGE'],
      ['POST', '/say', { text: 'x', volume_ratio: 500 }, 400, 'TA_ERR_BAD_INPUT'],
      ['POST', '/voiceprint/enroll', {}, 400, 'TA_ERR_USAGE'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const res = await controlRequest(files.socketPath, method, path, body);
      expect({ path, status: res.status }).toEqual({ path, status });
      expect(res.json()).toMatchObject({ code, exit_code: expect.any(Number), error: expect.any(String) });
    }
  });

  it('connectControl gives typed calls and rebuilds the daemon error class', async () => {
    const control = await connectControl(files.socketPath);
    expect((await control.status()).pid).toBe(daemon.pid);
    expect(await control.metrics()).toContain('terminal_agent_info');
    const err = await control.say({ text: '' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(64);
  });

  it('terminal-agent status prints the human summary and --json', async () => {
    const human = await runCliProcess(['status', '--config', files.configPath]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`pid ${daemon.pid}, running, up`));
    expect(human.stdout).toMatch(/faces: +2 cached; last sync .* ok/);
    expect(human.stdout).toContain(`audio:       output ${alsa.device}`);
    const json = await runCliProcess(['status', '--json', '--config', files.configPath]);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as AgentStatus).faces.cached).toBe(2);
  });
});

describe('with no daemon', () => {
  it('connectControl throws DaemonError saying how to start one; tryConnectControl gives undefined', async () => {
    const tmpd = tmpDirManual('ta-ctl-');
    const sock = join(tmpd.dir, 'none.sock');
    const err = await connectControl(sock).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DaemonError);
    expect((err as Error).message).toContain(`no terminal-agent daemon is running (nothing answers on ${sock})`);
    expect(await tryConnectControl(sock)).toBeUndefined();
    tmpd.remove();
  });

  it('terminal-agent status exits 1 with the same message', async () => {
    const tmpd = tmpDirManual('ta-ctl-');
    const emu = await startEmulator({ port: 0 });
    const f = daemonFiles(tmpd.dir, emu);
    const r = await runCliProcess(['status', '--config', f.configPath]);
    await emu.close();
    tmpd.remove();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no terminal-agent daemon is running');
    expect(r.stderr).toContain('[TA_ERR_DAEMON]');
  });
});
