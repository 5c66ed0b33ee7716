import { describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { controlRequest, installedCopy, removeProxyChunk, spawnDaemon } from '../daemon/daemon-harness.js';
import type { AgentStatus } from '../../src/control/types.js';

describe('terminal-agent demo', () => {
  it('runs emulator and daemon in ./demo/ with no sound card, syncs the sample faces, and stops both on Ctrl-C', async () => {
    const cwd = tmpDir('ta-demo-');
    // No sound card: the ALSA default device cannot be opened.
    const alsa = makeTestAlsa(tmpDir('ta-demo-alsa-'), { brokenDefault: true });
    const d = spawnDaemon(undefined, { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH }, ['demo'], cwd);
    await d.waitLog(() => d.stdout().includes('Ctrl-C stops it'), 20_000, 'the demo banner');
    const demoDir = join(cwd, 'demo');
    expect(d.stdout()).toContain(`Everything stays in ${demoDir};`);
    expect(d.stdout()).toContain('--config ./demo/config.yaml');
    expect(d.stdout()).toContain('cp "./demo/samples/Grace Hopper.jpg" ./demo/enroll/faces/');
    expect(d.stdout()).toContain('cp "./demo/samples/group photo.jpg" ./demo/enroll/faces/');
    const config = readFileSync(join(demoDir, 'config.yaml'), 'utf8');
    const socket = /socket: "(.*)"/.exec(config)![1]!;
    let status: AgentStatus | undefined;
    for (let i = 0; i < 100 && !(status?.faces.cached === 3); i++) {
      status = (await controlRequest(socket, 'GET', '/status')).json() as AgentStatus;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status?.faces.cached).toBe(3);
    expect(existsSync(join(demoDir, 'state', 'faces', 'index.json'))).toBe(true);
    expect(status?.audio.output_device).toBe('default');
    // No sound card: /say answers with the device error (it does not hang), and the demo lives on.
    const said = await controlRequest(socket, 'POST', '/say', { text: 'hello from the demo' });
    expect(said.status).toBe(500);
    expect(said.json()).toMatchObject({ code: 'TA_ERR_AUDIO_DEVICE', device: 'default', signal: 'SIGABRT' });
    expect((said.json() as { error: string }).error).toMatch(/cannot play on ALSA device "default" \(audio.output_device\)/);
    expect(d.child.exitCode).toBeNull();

    // The web console is on, on loopback, at the address the banner prints.
    const consoleUrl = /web console {3}(http:\/\/127\.0\.0\.1:\d+\/)/.exec(d.stdout())?.[1];
    expect(consoleUrl).toBeDefined();
    const session = await fetch(new URL('/api/session', consoleUrl));
    expect(await session.json()).toMatchObject({ authenticated: true, login_required: false });
    const faces = await fetch(new URL('/api/faces', consoleUrl), { headers: { cookie: String(session.headers.get('set-cookie')).split(';')[0]! } });
    expect(((await faces.json()) as { total: number }).total).toBe(3);
    expect(readFileSync(join(demoDir, 'config.yaml'), 'utf8')).toMatch(/^console:\n {2}listen: 127\.0\.0\.1:(8080|0)/m);

    // The sample photos pass the demo's own face check, all but the group photo. Grace Hopper is
    // one of the emulator's sample faces: her portrait updates it.
    for (const name of ['Grace Hopper.jpg', 'group photo.jpg']) copyFileSync(join(demoDir, 'samples', name), join(demoDir, 'enroll', 'faces', name));
    const doneJson = join(demoDir, 'enroll', 'done', 'faces', 'Grace Hopper.json');
    const failedJson = join(demoDir, 'enroll', 'failed', 'faces', 'group photo.error.json');
    for (let i = 0; i < 300 && !(existsSync(doneJson) && existsSync(failedJson)); i++) await new Promise((r) => setTimeout(r, 100));
    expect(JSON.parse(readFileSync(doneJson, 'utf8'))).toMatchObject({ action: 'updated', face_check: { verdict: 'accepted' } });
    expect(JSON.parse(readFileSync(failedJson, 'utf8'))).toMatchObject({ code: 'TA_ERR_FACE_CHECK', error: 'faces/group photo.jpg: 2 faces found: crop the image to one person' });

    d.signal('SIGINT');
    expect((await d.exited).code).toBe(0);
    expect(d.stdout()).toContain('demo stopped;');
    expect(existsSync(socket)).toBe(false);
  });

  it('a reload that cannot start the components again (the face cache folder made a file): the demo says so and exits 1', async () => {
    const cwd = tmpDir('ta-demo-reload-');
    const alsa = makeTestAlsa(tmpDir('ta-demo-alsa-'), { brokenDefault: true });
    const d = spawnDaemon(undefined, { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH }, ['demo'], cwd);
    await d.waitLog(() => d.stdout().includes('Ctrl-C stops it'), 20_000, 'the demo banner');
    const demoDir = join(cwd, 'demo');
    const log = () => readFileSync(join(demoDir, 'agent.log'), 'utf8');
    await d.waitLog(() => log().includes('"face cache ready"'), 10_000, 'the face cache');
    const faces = join(demoDir, 'state', 'faces');
    renameSync(faces, `${faces}.away`);
    writeFileSync(faces, 'not a folder\n');
    const configPath = join(demoDir, 'config.yaml');
    writeFileSync(configPath, readFileSync(configPath, 'utf8').replace(/^( {2}sync_interval: ).*$/m, '$110m'));
    d.signal('SIGHUP');
    expect(await d.exited).toEqual({ code: 1, signal: null });
    expect(d.stderr()).toMatch(new RegExp(`^terminal-agent: the demo stopped: a reload could not start its components again \\(.*${faces}.*\\); start 'terminal-agent demo' again \\(everything stays in ${demoDir}\\) \\[TA_ERR_DAEMON\\]\n$`));
    expect(log()).toContain('the components could not be started again with the new configuration');
  });

  it('a part of the program found gone while it runs (the proxy code, read at the first request behind HTTPS_PROXY): the demo says so and exits 1', async () => {
    const cwd = tmpDir('ta-demo-replaced-');
    const alsa = makeTestAlsa(tmpDir('ta-demo-alsa-'), { brokenDefault: true });
    const copy = installedCopy();
    // Read only at the daemon's first request (the face sync after start), through this proxy,
    // where nothing listens: nothing is sent.
    const gone = removeProxyChunk(copy);
    const d = spawnDaemon(undefined, { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH, HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9' }, ['demo'], cwd, join(copy, 'main.js'));
    expect(await d.exited).toEqual({ code: 1, signal: null });
    expect(d.stderr()).toBe(`terminal-agent: the demo stopped: its program files were replaced while it ran (${gone} is missing: an upgrade?); start 'terminal-agent demo' again (everything stays in ${join(cwd, 'demo')}), and if this comes again, reinstall terminal-agent [TA_ERR_DAEMON]\n`);
    expect(readFileSync(join(cwd, 'demo', 'agent.log'), 'utf8')).toContain(`"missing":${JSON.stringify(gone)}`);
  });
});

