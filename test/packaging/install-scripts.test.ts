import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// npm 11 ends every `npm ci` with a warning naming each installed package whose install script
// package.json's `allowScripts` does not list, and npm 12 skips those scripts: the quick start's
// first command must end without that warning, and with every script the agent needs allowed.
// This reads what `npm ci` installed here (the real node_modules), as npm decides it: a package
// runs an install script when it has preinstall, install or postinstall, or a binding.gyp and no
// install (npm then runs `node-gyp rebuild`).

interface Installed { name: string; dir: string }

function installedPackages(root: string): Installed[] {
  const found: Installed[] = [];
  const walk = (modules: string) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        const dir = join(modules, name);
        if (!existsSync(join(dir, 'package.json'))) continue;
        found.push({ name, dir });
        walk(join(dir, 'node_modules'));
      }
    }
  };
  walk(join(root, 'node_modules'));
  return found;
}

function runsInstallScript(dir: string): boolean {
  const scripts = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
  if (scripts.preinstall || scripts.install || scripts.postinstall) return true;
  return existsSync(join(dir, 'binding.gyp'));
}

describe('install scripts and allowScripts', () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> };
  const installed = installedPackages(REPO_ROOT);
  const withScripts = [...new Set(installed.filter((p) => runsInstallScript(p.dir)).map((p) => p.name))].sort();

  it('lists every installed package that has an install script, and nothing else', () => {
    expect(installed.length).toBeGreaterThan(100);
    expect(withScripts).toContain('better-sqlite3');
    expect(Object.keys(pkg.allowScripts).sort()).toEqual(withScripts);
  });

  it('allows the native modules the agent builds, and denies sharp, whose libvips comes prebuilt', () => {
    for (const name of ['better-sqlite3', 'speaker', 'unix-dgram', 'esbuild']) expect(pkg.allowScripts[name], name).toBe(true);
    expect(pkg.allowScripts.sharp).toBe(false);
    // What makes the denial safe: sharp's prebuilt binary for this platform, an npm package.
    const prebuilt = installed.filter((p) => /^@img\/sharp-linux-(x64|arm64)$/.test(p.name));
    expect(prebuilt.map((p) => p.name)).toContain(`@img/sharp-linux-${process.arch}`);
  });
});
