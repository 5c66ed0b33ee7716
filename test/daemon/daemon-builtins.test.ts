import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

// Node's built-in modules a running daemon has loaded, seen from outside (the trace preload of
// startup-modules.test.ts, which writes process.moduleLoadList as the process exits). Each one
// stays resident for good: its source and code in node's binary pages, its functions on the heap.
// The control socket is node:http's server (a standard part rather than an HTTP/1.1 of our own:
// about 0.35 MB of RssAnon in the idle daemon); node:https only with the console's TLS.

const HOOK = fileURLToPath(new URL('../cli/fixtures/trace-loads.cjs', import.meta.url));
const HTTP_MODULES = ['http', '_http_server', '_http_common', '_http_incoming', '_http_outgoing', 'https'];

/** The built-ins of a daemon that synced, answered GET /status on its socket, and stopped. */
async function builtinsOfDaemon(extra = ''): Promise<string[]> {
  const dir = tmpDir('ta-builtins-');
  const emulator = await startTestEmulator();
  emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Ada', image: faceImagePng([200, 150, 100]) }]);
  const files = daemonFiles(dir, emulator, { extra });
  const trace = join(dir, 'trace.txt');
  const daemon = spawnDaemon(files.configPath, { NODE_OPTIONS: `--require ${HOOK}`, TA_TRACE_FILE: trace });
  await daemon.waitLog(isReady, 20_000, 'the daemon ready');
  await daemon.waitLog((l) => l.msg === 'face sync done');
  expect((await controlRequest(files.socketPath, 'GET', '/status')).status).toBe(200);
  daemon.signal('SIGTERM');
  expect((await daemon.exited).code).toBe(0);
  return readFileSync(trace, 'utf8').split('\n').filter((l) => l.startsWith('builtin:')).map((l) => l.slice('builtin:'.length));
}

describe('the built-in modules a running daemon loads', () => {
  it('serves the control socket with node:http, and loads no node:https without the console\'s TLS', { timeout: 30_000 }, async () => {
    const builtins = await builtinsOfDaemon();
    expect(builtins).toEqual(expect.arrayContaining(['net', 'tls', 'crypto', 'http', '_http_server']));
    expect(builtins.filter((m) => HTTP_MODULES.includes(m))).not.toContain('https');
  });

  it('loads node:http for the metrics listener when metrics.listen is set (and the trace would see it)', { timeout: 30_000 }, async () => {
    const builtins = await builtinsOfDaemon('metrics:\n  listen: 127.0.0.1:0\n');
    expect(builtins).toEqual(expect.arrayContaining(['http', '_http_server']));
  });
});
