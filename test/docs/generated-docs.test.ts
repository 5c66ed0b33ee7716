import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../helpers/cli.js';

// The references made from the code (scripts/gen-docs.mjs: the command index, the config schema,
// src/errors.ts) must be what the code makes now: a change to a command, a key or an error code
// that was not followed by `npm run docs` fails here, naming the file.

const { renderAll } = (await import(pathToFileURL(join(REPO_ROOT, 'scripts', 'gen-docs.mjs')).href)) as { renderAll(): Promise<Record<string, string>> };
const generated = await renderAll();

describe('generated references', () => {
  it.each(Object.keys(generated))('%s is up to date (else run: npm run build && npm run docs)', (rel) => {
    expect(readFileSync(join(REPO_ROOT, rel), 'utf8'), `${rel} is stale: run npm run build && npm run docs`).toBe(generated[rel]);
  });

  it('troubleshooting.md says what to do about every error code and every exit code', () => {
    const guide = readFileSync(join(REPO_ROOT, 'docs', 'troubleshooting.md'), 'utf8');
    const codes = [...generated['docs/reference/errors.md']!.matchAll(/^\| `(TA_(?:ERR|WARN)_[A-Z_]+)` \|/gm)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThan(15);
    expect(codes.filter((c) => !new RegExp(`^### .*\\b${c}\\b`, 'm').test(guide))).toEqual([]);
    const exits = [...generated['docs/reference/errors.md']!.matchAll(/^\| (\d+) \| [a-zA-Z]+ \|/gm)].map((m) => m[1]!);
    expect(exits.filter((e) => !new RegExp(`^\\| ${e} \\|`, 'm').test(guide))).toEqual([]);
  });

  it('the man page is the one the package installs, and --help and the man page list the same commands', () => {
    expect(readFileSync(join(REPO_ROOT, 'packaging', 'build.sh'), 'utf8')).toContain('"$SRC/packaging/terminal-agent.1"');
    const man = generated['packaging/terminal-agent.1']!;
    const commands = generated['docs/reference/commands.md']!;
    const fromMan = [...man.slice(man.indexOf('.SH COMMANDS')).matchAll(/^\.B terminal\\-agent (.+)$/gm)].map((m) => m[1]!.replace(/\\-/g, '-'));
    const fromDoc = [...commands.matchAll(/^usage: terminal-agent (.+?)(?: \[options\])?$/gm)].map((m) => m[1]!);
    expect(fromMan.length).toBeGreaterThan(20);
    expect(fromMan).toEqual(fromDoc);
  });
});
