import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, readdirSync, readlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';
import { installedCopy } from '../daemon/daemon-harness.js';

// `npm run build` under a running daemon or `terminal-agent demo` (README "Development"): the
// process loads chunks lazily (a command group, the console, the proxy code) and its console serves
// dist/web/, so a rebuild must never leave a moment where a file it may still read is missing or
// half written. These run the real build scripts over a built tree (the sources unchanged, so
// every file keeps its name and content) while reading, again and again, every file of the build
// that was there before. The tree is a copy (node_modules linked): other test files read and copy
// the checkout's dist/ meanwhile. Its bundle is built once there first: esbuild names the modules
// it wraps by their path from the tree, so a chunk built elsewhere has other text, and another name.

function builtTree(): string {
  const root = dirname(installedCopy());
  for (const name of ['src', 'scripts', 'web', 'systemd', 'package.json', 'tsconfig.json']) {
    cpSync(join(REPO_ROOT, name), join(root, name), { recursive: true });
  }
  return root;
}

/** Runs `script`, reading every file of `before` (and checking dist/main.js) until it exits. */
async function watchThrough(root: string, script: string, before: Map<string, Buffer>): Promise<{ code: number | null; stderr: string; problems: string[]; rounds: number }> {
  const build = spawn(process.execPath, [join(root, script)], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  build.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let running = true;
  const exited = new Promise<number | null>((resolve) => build.on('exit', (code) => resolve(code)));
  void exited.then(() => (running = false));
  const problems = new Set<string>();
  let rounds = 0;
  while (running) {
    for (const [file, bytes] of before) {
      let now: Buffer;
      try {
        now = readFileSync(file);
      } catch (err) {
        problems.add(`${file}: ${(err as NodeJS.ErrnoException).code}`);
        continue;
      }
      if (!now.equals(bytes)) problems.add(`${file}: ${now.length} bytes, not the ${bytes.length} it had`);
    }
    try {
      if (readlinkSync(join(root, 'dist', 'main.js')) !== 'bundle/main.cjs') problems.add('dist/main.js points elsewhere');
    } catch (err) {
      problems.add(`dist/main.js: ${(err as NodeJS.ErrnoException).code}`);
    }
    rounds++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { code: await exited, stderr, problems: [...problems], rounds };
}

function contents(files: string[]): Map<string, Buffer> {
  return new Map(files.map((f) => [f, readFileSync(f)]));
}

describe('rebuilding under a running process', () => {
  it('the bundle: every file of the running build stays readable and whole throughout; only what the new build did not write is removed', async () => {
    const root = builtTree();
    const OUT = join(root, 'dist', 'bundle');
    const first = spawnSync(process.execPath, [join(root, 'scripts', 'bundle.mjs')], { cwd: root, encoding: 'utf8' });
    expect(first.status, first.stderr).toBe(0);
    const names = readdirSync(OUT).filter((n) => /\.(js|cjs|idx|json)$/.test(n));
    expect(names.length).toBeGreaterThan(20);
    const before = contents(names.map((n) => join(OUT, n)));
    // Left by an older build (a chunk of another text) and by a build killed midway.
    const stale = ['chunk-STALE000.js', '.main.cjs.99999.tmp'];
    for (const name of stale) {
      writeFileSync(join(OUT, name), 'stale');
      utimesSync(join(OUT, name), new Date('2026-01-01'), new Date('2026-01-01'));
    }

    const r = await watchThrough(root, 'scripts/bundle.mjs', before);
    expect(r.code, r.stderr).toBe(0);
    expect(r.problems).toEqual([]);
    // The build took long enough to be watched through.
    expect(r.rounds).toBeGreaterThan(5);

    for (const name of stale) expect(existsSync(join(OUT, name)), name).toBe(false);
    expect(readdirSync(OUT).filter((n) => /\.(js|cjs|idx|json)$/.test(n)).sort()).toEqual([...names].sort());
    expect(readdirSync(OUT).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    const version = spawnSync(process.execPath, [join(root, 'dist', 'main.js'), '--version'], { encoding: 'utf8' });
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  }, 60_000);

  it('the web console: index.html and its assets stay readable and whole throughout', async () => {
    const root = builtTree();
    const WEB = join(root, 'dist', 'web');
    const files = [join(WEB, 'index.html'), ...readdirSync(join(WEB, 'assets')).map((n) => join(WEB, 'assets', n))];
    expect(files.map((f) => f.slice(WEB.length + 1)).sort()).toEqual(['assets/app.css', 'assets/app.js', 'assets/icon.svg', 'assets/manifest.webmanifest', 'index.html']);
    const before = contents(files);
    writeFileSync(join(WEB, 'assets', 'old-chunk.js'), 'stale');

    const r = await watchThrough(root, 'web/build.mjs', before);
    expect(r.code, r.stderr).toBe(0);
    expect(r.problems).toEqual([]);
    expect(r.rounds).toBeGreaterThan(20);
    expect(existsSync(join(WEB, 'assets', 'old-chunk.js'))).toBe(false);
    expect(readdirSync(join(WEB, 'assets')).sort()).toEqual(['app.css', 'app.js', 'icon.svg', 'manifest.webmanifest']);
  }, 60_000);
});
