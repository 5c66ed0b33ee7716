import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

// The bundle's chunk loader (scripts/chunk-loader.cjs): a "transient" group of chunks runs afresh
// at each load and is not kept, so that the daemon's config reader (zod, YAML) is freed between
// reads; every other chunk has one copy. A command group's pack is read when the group first runs.

const LOADER = join(REPO_ROOT, 'scripts', 'chunk-loader.cjs');
const require = createRequire(import.meta.url);
const { createChunkLoader } = require(LOADER) as {
  createChunkLoader(dir: string, o?: { transient?: Record<string, string[]>; packs?: Record<string, string> }): { load(name: string): Record<string, unknown>; loaded(): { name: string }[] };
};

function chunks(): string {
  const dir = tmpDir('ta-chunks-');
  // Each chunk counts its runs on globalThis, as a module with state would show it.
  const count = (name: string) => `globalThis.__taRuns = globalThis.__taRuns ?? {}; globalThis.__taRuns[${JSON.stringify(name)}] = (globalThis.__taRuns[${JSON.stringify(name)}] ?? 0) + 1;`;
  writeFileSync(join(dir, 'shared.js'), `${count('shared')} exports.box = {};`);
  writeFileSync(join(dir, 'member.js'), `${count('member')} exports.big = new Array(1e5).fill(1); exports.shared = require('./shared.js');`);
  writeFileSync(join(dir, 'root.js'), `${count('root')} exports.member = require('./member.js'); exports.shared = require('./shared.js');`);
  writeFileSync(join(dir, 'main.js'), `${count('main')} exports.shared = require('./shared.js');`);
  return dir;
}

describe('the chunk loader', () => {
  it('names a chunk that is gone (another build installed meanwhile), and tries it again at the next load', () => {
    const dir = tmpDir('ta-chunks-');
    writeFileSync(join(dir, 'main.js'), `exports.later = () => require('./chunk-GONE.js');`);
    const loader = createChunkLoader(dir);
    const main = loader.load('main.js') as { later(): { v: number } };
    const missing = join(dir, 'chunk-GONE.js');
    expect(() => main.later()).toThrow(`${missing} is missing: the installed terminal-agent was replaced while this process ran (an upgrade?); run the command again, or restart the daemon (systemctl restart terminal-agent)`);
    expect(() => main.later()).toThrow('is missing');
    writeFileSync(missing, 'exports.v = 7;');
    expect(main.later().v).toBe(7);
  });

  it('makes the CLI say so in one line, with no stack, when a command needs a chunk that is gone', () => {
    // The built tree copied, with the config reader's chunk deleted: what a CLI call that started
    // before an upgrade's unpack finds when it reads the config after it.
    const copy = tmpDir('ta-dist-');
    cpSync(join(REPO_ROOT, 'dist'), copy, { recursive: true, verbatimSymlinks: true });
    const gone = readdirSync(join(copy, 'bundle')).filter((f) => /^load-config-\w+\.js$/.test(f));
    expect(gone).toHaveLength(1);
    rmSync(join(copy, 'bundle', gone[0]!));
    const r = spawnSync(process.execPath, [join(copy, 'main.js'), 'config', 'check', '--config', join(copy, 'none.yaml')], { encoding: 'utf8' });
    expect(r.stderr).toBe(`terminal-agent: ${join(copy, 'bundle', gone[0]!)} is missing: the installed terminal-agent was replaced while this process ran (an upgrade?); run the command again, or restart the daemon (systemctl restart terminal-agent)\n`);
    expect(r.status).toBe(1);
  });

  it('behind HTTPS_PROXY, the proxy code (undici, read at the first request) gone: the command says so in one line and exits 1, not as a network failure', () => {
    const copy = tmpDir('ta-dist-');
    cpSync(join(REPO_ROOT, 'dist'), copy, { recursive: true, verbatimSymlinks: true });
    const gone = readdirSync(join(copy, 'bundle')).filter((f) => /^undici-[\w-]+\.js$/.test(f));
    expect(gone).toHaveLength(1);
    rmSync(join(copy, 'bundle', gone[0]!));
    const config = join(copy, 'config.yaml');
    writeFileSync(config, ['service:', '  base_url: http://127.0.0.1:9', '  face_base_url: http://127.0.0.1:9/v1/api', '  terminal_secret: "s"', `state_dir: ${join(copy, 'state')}`, ''].join('\n'));
    const env = { PATH: process.env.PATH ?? '', HTTPS_PROXY: 'http://127.0.0.1:9' };
    const r = spawnSync(process.execPath, [join(copy, 'main.js'), 'faces', 'list', '--config', config], { encoding: 'utf8', env });
    expect(r.stderr).toBe(`terminal-agent: GET /faces: not sent: ${join(copy, 'bundle', gone[0]!)} is missing: the installed terminal-agent was replaced while this process ran (an upgrade?); run the command again, or restart the daemon (systemctl restart terminal-agent) [TA_ERR_PROGRAM_REPLACED]\n`);
    expect(r.status).toBe(1);
  });

  it('runs a transient group afresh at each load, and shares every chunk outside it', () => {
    const dir = chunks();
    const runs = () => (globalThis as { __taRuns?: Record<string, number> }).__taRuns ?? {};
    const before = { ...runs() };
    const loader = createChunkLoader(dir, { transient: { 'root.js': ['member.js'] } });
    const main = loader.load('main.js');
    const a = loader.load('root.js');
    const b = loader.load('root.js');
    expect(a).not.toBe(b);
    expect(a.member).not.toBe(b.member);
    expect(a.shared).toBe(main.shared);
    expect(b.shared).toBe(main.shared);
    expect((a.member as { shared: unknown }).shared).toBe(main.shared);
    const ran = (k: string) => (runs()[k] ?? 0) - (before[k] ?? 0);
    expect([ran('main'), ran('root'), ran('member'), ran('shared')]).toEqual([1, 2, 2, 1]);
    expect(loader.load('main.js')).toBe(main);
  });

  it('keeps nothing of a transient group once its caller drops it', () => {
    const dir = chunks();
    const script = `
      const { createChunkLoader } = require(${JSON.stringify(LOADER)});
      const loader = createChunkLoader(${JSON.stringify(dir)}, { transient: { 'root.js': ['member.js'] } });
      const kept = loader.load('main.js');
      let root = loader.load('root.js');
      const member = new WeakRef(root.member);
      const shared = new WeakRef(root.shared);
      root = undefined;
      setTimeout(() => {
        gc();
        console.log(JSON.stringify({ member: member.deref() === undefined, shared: shared.deref() === kept.shared }));
      }, 10);`;
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ member: true, shared: true });
  });

  it('reads a group\'s pack when the group is first required, and runs each chunk once, from the first pack that defines it', () => {
    const dir = tmpDir('ta-packs-');
    const define = (name: string, body: string) => `__taDefineChunk(${JSON.stringify(name)},function(exports,require,module,__filename,__dirname,__taSourceUrl){${body}\n});\n`;
    const count = (name: string) => `globalThis.__taPackRuns = globalThis.__taPackRuns ?? []; globalThis.__taPackRuns.push(${JSON.stringify(name)});`;
    // The files on their own say "file": what runs must come from the packs.
    for (const name of ['group-a.js', 'group-b.js', 'shared.js', 'only-b.js']) writeFileSync(join(dir, name), 'exports.from = "file";');
    writeFileSync(join(dir, 'pack-A.js'), define('group-a.js', `${count('group-a')} exports.from = "pack"; exports.shared = require('./shared.js');`) + define('shared.js', `${count('shared')} exports.from = "pack A";`));
    writeFileSync(join(dir, 'pack-B.js'), define('group-b.js', `${count('group-b')} exports.from = "pack"; exports.shared = require('./shared.js'); exports.onlyB = require('./only-b.js');`)
      + define('shared.js', `${count('shared')} exports.from = "pack B";`) + define('only-b.js', `${count('only-b')} exports.from = "pack";`));
    const script = `
      const { createChunkLoader } = require(${JSON.stringify(LOADER)});
      const loader = createChunkLoader(${JSON.stringify(dir)}, { packs: { 'group-a.js': 'pack-A.js', 'group-b.js': 'pack-B.js' } });
      const read0 = loader.loaded().map((c) => c.name);
      const a = loader.load('group-a.js');
      const read1 = loader.loaded().map((c) => c.name);
      const b = loader.load('group-b.js');
      console.log(JSON.stringify({ read0, read1, read2: loader.loaded().map((c) => c.name), a: a.from, b: b.from, shared: a.shared.from, same: a.shared === b.shared, onlyB: b.onlyB.from, runs: globalThis.__taPackRuns }));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      read0: [], read1: ['pack-A.js'], read2: ['pack-A.js', 'pack-B.js'],
      a: 'pack', b: 'pack', shared: 'pack A', same: true, onlyB: 'pack',
      runs: ['group-a', 'shared', 'group-b', 'only-b'],
    });
  });

  it('in the build, `status` finds its command group and everything it imports in one pack', () => {
    const bundle = join(REPO_ROOT, 'dist', 'bundle');
    const { packs, packed } = JSON.parse(readFileSync(join(bundle, 'main-chunk.json'), 'utf8')) as { packs: Record<string, string>; packed: string[] };
    const meta = JSON.parse(readFileSync(join(REPO_ROOT, 'dist', 'bundle-meta.json'), 'utf8')) as { outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown> }> };
    const group = Object.keys(packs).find((name) => /^daemon-commands-/.test(name))!;
    const text = readFileSync(join(bundle, packs[group]!), 'utf8');
    const inPack = [...text.matchAll(/__taDefineChunk\("([^"]+)"/g)].map((m) => m[1]!);
    const inputs = [...inPack, ...packed].flatMap((name) => Object.keys(meta.outputs[`dist/bundle/${name}`]!.inputs));
    expect(inputs).toEqual(expect.arrayContaining(['src/cli/daemon-commands.ts', 'src/control/control-client.ts', 'src/daemon/status-format.ts', 'src/config/control-socket.ts']));
    // Only what the group imports statically: not the daemon, which `run` imports when it runs.
    expect(inputs).not.toContain('src/daemon/daemon.ts');
  });

  it('in the build, the config reader and the YAML parser are transient groups', () => {
    const transient = JSON.parse(readFileSync(join(REPO_ROOT, 'dist', 'bundle', 'transient.json'), 'utf8')) as Record<string, string[]>;
    const meta = JSON.parse(readFileSync(join(REPO_ROOT, 'dist', 'bundle-meta.json'), 'utf8')) as { outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown> }> };
    const chunk = (name: string) => Object.entries(meta.outputs).find(([path]) => path.endsWith(`/${name}`))![1];
    const roots = Object.keys(transient).map((name) => chunk(name).entryPoint);
    expect(roots.sort()).toEqual(['src/config/load-config.ts', 'src/config/yaml-plain.ts']);
    // zod and the schema live in the config reader's own chunks, YAML in both groups: nothing else loads them.
    const inputsOf = (root: string) => [root, ...transient[root]!].flatMap((name) => Object.keys(chunk(name).inputs));
    const rootOf = (entry: string) => Object.keys(transient).find((name) => chunk(name).entryPoint === entry)!;
    const config = inputsOf(rootOf('src/config/load-config.ts'));
    expect(config).toEqual(expect.arrayContaining(['src/config/schema.ts', 'node_modules/zod/v4/core/core.js', 'node_modules/zod/v4/mini/schemas.js', 'node_modules/yaml/browser/dist/compose/composer.js']));
    // zod/mini, not the classic API (a third of its cost to load and build the schema); YAML's ES
    // module build, which esbuild trims (its CommonJS build comes whole).
    expect(config.filter((i) => /^node_modules\/(zod\/v4\/classic|yaml\/dist)\//.test(i))).toEqual([]);
    expect(inputsOf(rootOf('src/config/yaml-plain.ts'))).toContain('node_modules/yaml/browser/dist/compose/composer.js');
  });
});
