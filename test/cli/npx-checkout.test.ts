import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// README's quick start runs `npx terminal-agent ...` in the checkout. npm's exec installs the
// project's own package into its npx cache (running its `prepare`, a rebuild, and an audit
// request) when package.json names the command as a bin; it runs node_modules/.bin/<command> as
// it is otherwise. The build links that bin (npm run link-bin); package.json names none.

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string; bin?: unknown };

describe('npx terminal-agent in the checkout', () => {
  it('runs the built CLI as it is: no install, no lifecycle script, no request, no rebuild', () => {
    expect(pkg.bin).toBeUndefined();
    expect(realpathSync(join(REPO_ROOT, 'node_modules', '.bin', 'terminal-agent'))).toBe(realpathSync(join(REPO_ROOT, 'dist', 'main.js')));
    const built = statSync(join(REPO_ROOT, 'dist', '.built')).mtimeMs;
    const r = spawnSync('npx', ['--loglevel=silly', 'terminal-agent', '--version'], { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, CI: 'true' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${pkg.version}\n`);
    // npm's own account of what it did: nothing fetched (http), installed (reify) or run (a script).
    expect(r.stderr).not.toMatch(/\bhttp\b|reify|info run|run-script|> terminal-agent@/i);
    expect(statSync(join(REPO_ROOT, 'dist', '.built')).mtimeMs).toBe(built);
  });
});
