import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, installedCopy, isReady, removeProxyChunk, spawnDaemon } from './daemon-harness.js';

// The daemon reads some chunks of its bundle only when first needed. One found gone means another
// build was installed under it (a half-done or manual upgrade): it says what is missing and what
// to do, drains, and exits 1, so that the unit's Restart=always starts the installed files.

const REPLACED_LOG = "this daemon's program files were replaced while it ran (an upgrade?) and a part it needs is gone: it stops and exits 1, so that systemd (Restart=always) starts the installed files; if this comes again after the restart, the installation is incomplete: reinstall the package (apt install --reinstall terminal-agent)";

describe('a chunk of the program gone under the running daemon', () => {
  it('the unit restarts a daemon that exits 1', () => {
    const unit = readFileSync(join(REPO_ROOT, 'systemd', 'terminal-agent.service'), 'utf8');
    expect(unit).toMatch(/^Restart=always$/m);
    expect(unit.match(/^RestartPreventExitStatus=(.*)$/m)?.[1]?.split(/\s+/)).not.toContain('1');
  });

  it('GET /metrics that needs it: the caller is told, the log names the file and the fix, the daemon drains and exits 1', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-replaced-'), emulator);
    const copy = installedCopy();
    const d = spawnDaemon(files.configPath, {}, ['run'], REPO_ROOT, join(copy, 'main.js'));
    await d.waitLog(isReady);
    // prom-client's process metrics: read at the first scrape, not at start.
    const bundle = join(copy, 'bundle');
    const chunks = readdirSync(bundle).filter((n) => /^chunk-\w+\.js$/.test(n) && readFileSync(join(bundle, n), 'utf8').includes('process_cpu_user_seconds_total'));
    expect(chunks).toHaveLength(1);
    const gone = join(bundle, chunks[0]!);
    rmSync(gone);

    const res = await controlRequest(files.socketPath, 'GET', '/metrics');
    expect(res.status).toBe(500);
    expect(res.json()).toEqual({
      error: `the daemon's program files were replaced while it ran (${gone} is missing): it stops, and systemd starts it again from the installed files; retry in a few seconds`,
      code: 'TA_ERR_DAEMON',
      exit_code: 1,
    });
    expect(await d.exited).toEqual({ code: 1, signal: null });
    const logged = d.logs().filter((l) => l.msg === REPLACED_LOG);
    expect(logged).toEqual([expect.objectContaining({ level: 'error', component: 'daemon', where: 'GET /metrics', missing: gone })]);
    expect(d.logs().at(-1)).toMatchObject({ msg: 'stopped', clean: true });
  });

  it('behind HTTPS_PROXY, the proxy code (undici, read at the first request) gone: the log names the file and the request, the daemon drains and exits 1', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-replaced-proxy-'), emulator);
    const copy = installedCopy();
    // Gone before the start: the daemon does not read it until its first request (the face sync
    // that follows READY), through the proxy named here (nothing listens there: nothing is sent).
    const gone = removeProxyChunk(copy);
    const d = spawnDaemon(files.configPath, { HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9' }, ['run'], REPO_ROOT, join(copy, 'main.js'));
    expect(await d.exited).toEqual({ code: 1, signal: null });
    const logged = d.logs().filter((l) => l.msg === REPLACED_LOG);
    expect(logged).toEqual([expect.objectContaining({ level: 'error', component: 'daemon', where: 'GET /faces', missing: gone })]);
    expect(d.logs().at(-1)).toMatchObject({ msg: 'stopped', clean: true });
  });
});
