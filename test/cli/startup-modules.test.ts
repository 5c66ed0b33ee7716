import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { REPO_ROOT, runCliProcess } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';
import type { Emulator } from '../../src/emulator/index.js';

// What a CLI process loads, seen from outside: the built CLI runs with a preload that writes down
// every JavaScript file it reads; the chunks of the esbuild bundle are mapped back to the source
// modules they hold (dist/bundle-meta.json). `--help` and the local commands must not load the
// daemon, the emulator or the HTTP client (http-core, undici): they cost start-up time on every
// call, on a Pi several times what they cost here. undici is loaded by the first request.

const HOOK = fileURLToPath(new URL('./fixtures/trace-loads.cjs', import.meta.url));
const META = join(REPO_ROOT, 'dist', 'bundle-meta.json');

/** Node's built-in modules a process loaded (the trace's `builtin:` lines), e.g. `fs/promises`. */
function builtinsOf(traceFile: string): string[] {
  return readFileSync(traceFile, 'utf8').split('\n').filter((l) => l.startsWith('builtin:')).map((l) => l.slice('builtin:'.length));
}

/** Source modules (src/... .ts or node_modules/...) behind the files a process loaded. */
function modulesOf(traceFile: string): string[] {
  const meta = existsSync(META) ? (JSON.parse(readFileSync(META, 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> }) : { outputs: {} };
  const paths = readFileSync(traceFile, 'utf8').split('\n').filter((l) => l.startsWith('path:')).map((l) => l.slice('path:'.length));
  const out = new Set<string>();
  for (const path of paths) {
    const rel = relative(REPO_ROOT, path).split('\\').join('/');
    const chunk = meta.outputs[rel];
    if (chunk) for (const input of Object.keys(chunk.inputs)) out.add(input);
    else out.add(rel.replace(/^dist\/(.*)\.js$/, 'src/$1.ts'));
  }
  return [...out].sort();
}

async function traceCli(
  name: string, args: string[], env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string; modules: string[]; builtins: string[] }> {
  const traceFile = join(dir.dir, `trace-${name}.txt`);
  rmSync(traceFile, { force: true });
  const r = await runCliProcess(args, { env: { ...env, NODE_OPTIONS: `--require=${HOOK}`, TA_TRACE_FILE: traceFile } });
  return { ...r, modules: modulesOf(traceFile), builtins: builtinsOf(traceFile) };
}

// Built-in modules the light commands must not load, each a measured cost on every call (the CLI
// prints through process.stdout/stderr and reads its arguments with node:util's parseArgs: Node's
// own parts, whatever they load):
// - node:fs/promises (with readline and fs watchers), about 2 ms;
// - node:crypto, about 3 ms.
// (node:module is loaded by every command: the entry turns on Node's compile cache with it.)
const FS_PROMISES = 'fs/promises';
const CRYPTO = 'crypto';

const DAEMON = /^src\/(daemon\/(daemon|agent|components)|cli\/daemon-env)\.ts$/;
const EMULATOR = /^src\/emulator\//;
const UNDICI = /^node_modules\/undici\//;
const HTTP_CLIENT = /^src\/client\/(http-core|undici-transport)\.ts$/;
const HEAVY = [DAEMON, EMULATOR, UNDICI, HTTP_CLIENT, /^src\/enroll\/enrollment\.ts$/, /^src\/faces\/face-sync\.ts$/, /^node_modules\/(prom-client|chokidar)\//];

function loadedOf(modules: string[], patterns: RegExp[]): string[] {
  return modules.filter((m) => patterns.some((p) => p.test(m)));
}

let dir: { dir: string; remove(): void };
let emulator: Emulator;
let files: DaemonFiles;
let daemon: DaemonProcess;

beforeAll(async () => {
  dir = tmpDirManual('ta-startup-');
  emulator = await startTestEmulator();
  files = daemonFiles(dir.dir, emulator);
  daemon = spawnDaemon(files.configPath);
  await daemon.waitLog(isReady, 20_000, 'the daemon ready');
}, 30_000);

afterAll(async () => {
  daemon?.signal('SIGTERM');
  await daemon?.exited;
  await emulator?.close();
  dir?.remove();
});

describe('what each CLI command loads at start-up', () => {
  it('the trace sees the bundle: a command that calls the service loads the HTTP client and undici (so the checks below can fail)', async () => {
    const r = await traceCli('faces-list', ['faces', 'list', '--config', files.configPath]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.modules).toEqual(expect.arrayContaining(['src/client/http-core.ts', 'src/client/undici-transport.ts']));
    expect(loadedOf(r.modules, [UNDICI]).length).toBeGreaterThan(0);
    expect(r.modules).toContain('src/cli/run-cli.ts');
  });

  it('with HTTP_PROXY set, a service call loads undici from the bundle and goes through the proxy', async () => {
    const connects: string[] = [];
    const proxy = createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      connects.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host!, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(socket).pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
    try {
      const r = await traceCli('faces-proxy', ['faces', 'list', '--config', files.configPath], { HTTP_PROXY: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
      expect(r.code, r.stderr).toBe(0);
      expect(connects).toEqual([new URL(emulator.faceBaseUrl).host]);
      expect(loadedOf(r.modules, [UNDICI]).length).toBeGreaterThan(0);
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it('--help and a command\'s --help load no configuration, logger, database or network code', async () => {
    for (const args of [['--help'], ['faces', 'list', '--help'], ['run', '--help']]) {
      const r = await traceCli('help', args);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('usage: terminal-agent');
      expect(loadedOf(r.modules, [...HEAVY, /^node_modules\/(zod|yaml|pino|better-sqlite3)\//]), args.join(' ')).toEqual([]);
      expect(r.builtins.filter((b) => [FS_PROMISES, CRYPTO].includes(b)), args.join(' ')).toEqual([]);
    }
  });

  it('status against the running daemon goes through the socket without loading the daemon, emulator, undici or the config schema', async () => {
    const r = await traceCli('status', ['status', '--config', files.configPath]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/running, up /);
    // Nor the config schema, nor the YAML library for a plain config: the socket's path is all it
    // needs from the config file.
    // Nor the service commands' shared helpers (image and name checks): one file read is ~0.5 ms.
    expect(loadedOf(r.modules, [...HEAVY, /^node_modules\/(pino|better-sqlite3|zod|yaml)\//, /^src\/config\/schema\.ts$/, /^src\/cli\/api-client\.ts$/, /^src\/client\//,
      // nor the disk floor's or the enrollment folders' code (node:fs/promises) for one line of text.
      /^src\/disk\/disk-floor\.ts$/, /^src\/enroll\/layout\.ts$/])).toEqual([]);
    // No fs/promises or crypto.
    expect(r.builtins.filter((b) => [FS_PROMISES, CRYPTO].includes(b))).toEqual([]);
  });

  it('status with a config file that no longer validates still asks the daemon at its socket; with no daemon there it reports the problem (exit 78)', async () => {
    const broken = join(dir.dir, 'broken.yaml');
    writeFileSync(broken, `${readFileSync(files.configPath, 'utf8')}\nfaces:\n  sync_interval: soon\n`.replace(/^faces:\n {2}sync_interval: 5m\n/m, ''));
    const check = await runCliProcess(['config', 'check', '--config', broken]);
    expect(check.code).toBe(78);
    const asked = await runCliProcess(['status', '--config', broken]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toMatch(/running, up /);

    const nobody = join(dir.dir, 'broken-nobody.yaml');
    writeFileSync(nobody, readFileSync(broken, 'utf8').replace(files.socketPath, join(dir.dir, 'nobody.sock')));
    const refused = await runCliProcess(['status', '--config', nobody]);
    expect(refused.code).toBe(78);
    expect(refused.stderr).toMatch(/faces\.sync_interval/);
  });

  it('config check and faces list --cached stay local: no daemon, emulator, undici', async () => {
    const check = await traceCli('config-check', ['config', 'check', '--config', files.configPath]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('config OK');
    expect(loadedOf(check.modules, [...HEAVY, /^node_modules\/(pino|better-sqlite3)\//])).toEqual([]);
    // Nor node:crypto (for reading a password hash: src/util/password-hash-format.ts).
    expect(check.builtins.filter((b) => [CRYPTO].includes(b))).toEqual([]);

    const cached = await traceCli('faces-cached', ['faces', 'list', '--cached', '--config', files.configPath]);
    expect(cached.code, cached.stderr).toBe(0);
    // Nor the logger: it reads the config and the database and prints. Nor the control client or the event stream (node:http).
    expect(loadedOf(cached.modules, [...HEAVY, /^node_modules\/pino\//, /^src\/(control\/control-client|events\/sse-client)\.ts$/,
      // nor the faces API's checks or the atomic file writes (node:crypto), which only other faces commands use,
      // nor the service commands' helpers (image and name checks) or what `faces sync` needs.
      /^src\/(client\/faces-api|util\/fs-atomic)\.ts$/, /^src\/cli\/(api-client|progress-format|live-area)\.ts$/, /^src\/client\/media-types\.ts$/,
      /^src\/cli\/faces-sync-command\.ts$/, /^src\/events\/event-bus\.ts$/])).toEqual([]);
    expect(cached.builtins.filter((b) => [FS_PROMISES, CRYPTO].includes(b))).toEqual([]);
  });
});
