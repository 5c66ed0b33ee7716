import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { daemonFiles, spawnDaemon } from '../daemon/daemon-harness.js';
import { unitNodeFlags } from '../helpers/unit-flags.js';

// What the Debian package's postinst runs on the device (dist/bundle/make-code-caches.cjs), on a
// copy of the built bundle laid out as the package lays it out: the V8 code caches are made where
// the loader finds them, replace whatever was there, and the CLI then runs from them. A cache fits
// only the node and CPU that made it, so the package ships none (packaging/check-arm64.sh shows
// the same on arm64 under qemu).

const UNIT = join(REPO_ROOT, 'systemd', 'terminal-agent.service');
const UNIT_TEXT = readFileSync(UNIT, 'utf8');
/** The daemon as the unit starts it: its NODE_OPTIONS, and the node flags on its ExecStart=. */
const { nodeOptions: UNIT_NODE_OPTIONS, args: UNIT_NODE_ARGS } = unitNodeFlags(UNIT_TEXT);

/** An installed-like tree: dist/bundle copied (the caches are written there), the rest linked. */
function packageTree(): string {
  const root = tmpDir('ta-code-caches-');
  mkdirSync(join(root, 'dist'));
  for (const name of readdirSync(join(REPO_ROOT, 'dist'))) {
    if (name === 'bundle') cpSync(join(REPO_ROOT, 'dist', 'bundle'), join(root, 'dist', 'bundle'), { recursive: true, filter: (f) => !f.endsWith('.v8') });
    else symlinkSync(join(REPO_ROOT, 'dist', name), join(root, 'dist', name));
  }
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'));
  cpSync(join(REPO_ROOT, 'package.json'), join(root, 'package.json'));
  return join(root, 'dist', 'bundle');
}

const makeCaches = (bundle: string, unit: string) =>
  spawnSync(process.execPath, [join(bundle, 'make-code-caches.cjs'), '--unit', unit, '--timeout', '30'], { encoding: 'utf8', env: { PATH: process.env.PATH } });

/** Cache files by key (<chunk>.js.<key>.v8), and any other cache-like leftovers. */
function caches(bundle: string): { keys: Map<string, number>; other: string[] } {
  const keys = new Map<string, number>();
  const other: string[] = [];
  for (const name of readdirSync(bundle)) {
    const m = /^.+\.js\.([0-9a-f]+)\.v8$/.exec(name);
    if (m) keys.set(m[1]!, (keys.get(m[1]!) ?? 0) + 1);
    else if (/\.v8|\.tmp$/.test(name)) other.push(name);
  }
  return { keys, other };
}

/** Runs the CLI through the loader (as dist/main.js does), with node's flags `nodeArgs`, and says
 * which chunks came from a cache. */
function loadedChunks(bundle: string, args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []) {
  const report = join(bundle, '..', '..', 'loaded.json');
  const r = spawnSync(process.execPath, [...nodeArgs, join(bundle, 'code-cache.cjs'), '--report', report, bundle, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(readFileSync(report, 'utf8')) as { name: string; cached: boolean; rejected: boolean }[];
}

describe('V8 code caches made on the device (postinst)', () => {
  it('writes one set for the CLI and one for the unit\'s node flags, replaces stale ones, and the CLI then runs every chunk from them', () => {
    const bundle = packageTree();
    const pack = (JSON.parse(readFileSync(join(bundle, 'main-chunk.json'), 'utf8')) as { pack: string }).pack;
    // Left by an older version (a chunk that is gone) and by a run killed while writing.
    writeFileSync(join(bundle, 'chunk-GONE0000.js.deadbeef.v8'), 'stale');
    writeFileSync(join(bundle, `${pack}.1234abcd.v8.4242.tmp`), 'half');
    expect(loadedChunks(bundle, ['--help']).every((c) => !c.cached)).toBe(true);

    const r = makeCaches(bundle, UNIT);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^make-code-caches: V8 code caches for the CLI and the daemon: \d+ \(key [0-9a-f]+\), \d+ \(key [0-9a-f]+\)\n$/);
    const { keys, other } = caches(bundle);
    expect(other).toEqual([]);
    expect(keys.size).toBe(2);
    for (const n of keys.values()) expect(n).toBeGreaterThan(5);

    for (const args of [['--help'], ['faces', 'list', '--help']]) {
      const chunks = loadedChunks(bundle, args);
      // The pack at least (the chunks every command loads); `faces list --help` adds none of its own.
      expect(chunks.map((c) => c.name)).toContain(pack);
      expect(chunks.filter((c) => !c.cached || c.rejected), args.join(' ')).toEqual([]);
    }
    // The daemon's flags find their own set, which V8 accepts (the pack: main chunk and all it shares).
    expect(UNIT_NODE_ARGS.every((a) => a.startsWith('--'))).toBe(true);
    const withFlags = loadedChunks(bundle, ['--help'], { NODE_OPTIONS: UNIT_NODE_OPTIONS }, UNIT_NODE_ARGS);
    expect(withFlags.filter((c) => c.rejected)).toEqual([]);
    expect(withFlags.find((c) => c.name === pack)?.cached).toBe(true);
    // Only with both: a daemon started without ExecStart='s flags would find none of its own.
    expect(loadedChunks(bundle, ['--help'], { NODE_OPTIONS: UNIT_NODE_OPTIONS }).find((c) => c.name === pack)?.cached).toBe(false);
  }, 60_000);

  /** Makes the caches for the unit with an admin's drop-in; says whether the pack's cache serves `--help` run with `nodeOptions` and `nodeArgs`. */
  function withDropIn(text: string): (nodeOptions: string, nodeArgs: string[]) => boolean | undefined {
    const bundle = packageTree();
    const dropIn = join(bundle, '..', '..', 'override.conf');
    writeFileSync(dropIn, `[Service]\n${text}`);
    const r = spawnSync(process.execPath, [join(bundle, 'make-code-caches.cjs'), '--unit', UNIT, '--unit', dropIn], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(r.status, r.stderr).toBe(0);
    const pack = (JSON.parse(readFileSync(join(bundle, 'main-chunk.json'), 'utf8')) as { pack: string }).pack;
    return (nodeOptions, nodeArgs) => loadedChunks(bundle, ['--help'], { NODE_OPTIONS: nodeOptions }, nodeArgs).find((c) => c.name === pack)?.cached;
  }

  it('follows an admin\'s drop-in that changes the unit\'s NODE_OPTIONS (the last one wins, as in systemd)', () => {
    const cached = withDropIn('Environment=NODE_OPTIONS=--max-old-space-size=200\n');
    expect(cached('--max-old-space-size=200', UNIT_NODE_ARGS)).toBe(true);
    expect(cached(UNIT_NODE_OPTIONS, UNIT_NODE_ARGS)).toBe(false);
  }, 60_000);

  it('follows a drop-in that replaces the unit\'s ExecStart= (an empty one clears, as in systemd)', () => {
    const cached = withDropIn('ExecStart=\nExecStart=/usr/bin/node --stack-size=900 /opt/terminal-agent/dist/main.js run --config /etc/terminal-agent/config.yaml\n');
    expect(cached(UNIT_NODE_OPTIONS, ['--stack-size=900'])).toBe(true);
    expect(cached(UNIT_NODE_OPTIONS, UNIT_NODE_ARGS)).toBe(false);
  }, 60_000);

  it('caches written by a daemon whose first face sync succeeded (V8\'s flags changed after it) are taken at the next start', async () => {
    // The daemon sets V8 flags after its first sync (src/daemon/steady-v8-flags.ts), which
    // changes the flag hash a cache is written with; the run that writes them keeps V8's flags.
    const bundle = packageTree();
    const emulator = await startTestEmulator();
    // A face to sync: an empty group's sync logs nothing at info.
    emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Ada', image: Buffer.from('89504e470d0a1a0a', 'hex') }]);
    const files = daemonFiles(tmpDir('ta-code-caches-'), emulator);
    const d = spawnDaemon(files.configPath, {}, [bundle, 'run'], REPO_ROOT, join(bundle, 'code-cache.cjs'));
    await d.waitLog((l) => l.component === 'faces' && l.msg === 'face sync done', 15_000, 'the first sync');
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
    const pack = (JSON.parse(readFileSync(join(bundle, 'main-chunk.json'), 'utf8')) as { pack: string }).pack;
    const chunks = loadedChunks(bundle, ['--help']);
    expect(chunks.find((c) => c.name === pack)).toEqual({ name: pack, cached: true, rejected: false });
  }, 60_000);

  it('a daemon that cannot start makes it fail with a reason, promptly, keeping the CLI\'s caches', () => {
    const bundle = packageTree();
    const unit = join(bundle, '..', '..', 'broken.service');
    writeFileSync(unit, UNIT_TEXT.replace(/^Environment="?NODE_OPTIONS=.*$/m, 'Environment="NODE_OPTIONS=--no-such-node-flag"'));
    const t0 = Date.now();
    const r = makeCaches(bundle, unit);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^make-code-caches: incomplete \(the daemon did not answer status; caches: \d+ \(key [0-9a-f]+\)\): start-up compiles what has none\n$/);
    expect(Date.now() - t0).toBeLessThan(25_000);
    expect(caches(bundle).keys.size).toBe(1);
    expect(loadedChunks(bundle, ['--help']).every((c) => c.cached)).toBe(true);
  }, 60_000);
});
