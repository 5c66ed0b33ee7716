import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// `npm run build` under a running daemon or `terminal-agent demo` (README "From a checkout"): the
// process loads chunks lazily (a command group, the console, the proxy code), so a rebuild must
// never leave a moment where a chunk it may still need is missing or half written. This runs the
// real scripts/bundle.mjs over the real dist/ (the sources unchanged, so every chunk keeps its
// name) while reading, again and again, every file a process started before it may load.

const DIST = join(REPO_ROOT, 'dist');
const OUT = join(DIST, 'bundle');

describe('rebuilding the bundle', () => {
  it('keeps every file of the running build readable and whole throughout, and removes only what the new build did not write', async () => {
    const before = new Map<string, Buffer>();
    for (const name of readdirSync(OUT)) if (/\.(js|cjs|idx|json)$/.test(name)) before.set(name, readFileSync(join(OUT, name)));
    expect(before.size).toBeGreaterThan(20);
    const caches = readdirSync(OUT).filter((n) => n.endsWith('.v8')).sort();
    expect(caches.length).toBeGreaterThan(10);
    // Left by an older build (a chunk of another text, its code cache; a cache of a chunk still
    // built, for node flags the unit no longer sets) and by a build killed midway.
    const liveChunk = [...before.keys()].find((n) => /^chunk-\w+\.js$/.test(n))!;
    const stale = ['chunk-STALE000.js', 'chunk-STALE000.js.0123abcd.v8', `${liveChunk}.0badc0de.v8`, '.main.cjs.99999.tmp'];
    for (const name of stale) {
      writeFileSync(join(OUT, name), 'stale');
      utimesSync(join(OUT, name), new Date('2026-01-01'), new Date('2026-01-01'));
    }

    const build = spawn(process.execPath, [join(REPO_ROOT, 'scripts', 'bundle.mjs')], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    build.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => build.on('exit', (code) => resolve(code)));
    let running = true;
    void exited.then(() => (running = false));

    const problems = new Set<string>();
    let rounds = 0;
    while (running) {
      for (const [name, bytes] of before) {
        let now: Buffer | undefined;
        try {
          now = readFileSync(join(OUT, name));
        } catch (err) {
          problems.add(`${name}: ${(err as NodeJS.ErrnoException).code}`);
          continue;
        }
        // main-chunk.json, transient.json and the index are rewritten with the same content.
        if (!now.equals(bytes)) problems.add(`${name}: ${now.length} bytes, not the ${bytes.length} it had`);
      }
      try {
        if (readlinkSync(join(DIST, 'main.js')) !== 'bundle/main.cjs') problems.add('dist/main.js points elsewhere');
      } catch (err) {
        problems.add(`dist/main.js: ${(err as NodeJS.ErrnoException).code}`);
      }
      rounds++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await exited, stderr).toBe(0);
    expect([...problems]).toEqual([]);
    // The build took long enough to be watched through (esbuild, the packs, the code caches).
    expect(rounds).toBeGreaterThan(20);

    for (const name of stale) expect(existsSync(join(OUT, name)), name).toBe(false);
    expect(readdirSync(OUT).filter((n) => /\.(js|cjs|idx|json)$/.test(n)).sort()).toEqual([...before.keys()].sort());
    expect(readdirSync(OUT).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    // The code caches made again, for the same chunks and flags.
    expect(readdirSync(OUT).filter((n) => n.endsWith('.v8')).sort()).toEqual(caches);
    const version = spawnSync(process.execPath, [join(DIST, 'main.js'), '--version'], { encoding: 'utf8' });
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  }, 60_000);
});
