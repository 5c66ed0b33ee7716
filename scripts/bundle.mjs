// `npm run build:bundle` (part of `npm run build`, after tsc): replaces dist/main.js with an esbuild
// bundle of src/main.ts and its dependencies, split at every `await import()`, in dist/bundle/.
// Node's loader would otherwise resolve, read and compile each of the ~550 files the daemon loads
// one by one; one file per split point costs a fraction of that, and each command loads only the
// chunks it imports. esbuild splits only ES modules; each chunk is then converted to CommonJS
// (`import` becomes `require`, `await import()` a lazy `require`), because Node 20's CommonJS
// loader starts a command in about half the CPU its ES module loader takes (`status` 2.2x a bare
// node as ES modules against 1.5x). dist/bundle/package.json says the chunks are CommonJS.
//
// dist/main.js (the path the unit, the package and the tests run) links to dist/bundle/main.cjs
// (Node takes the module format from the real path), a small entry that turns on
// Node's compile cache (module.enableCompileCache, Node 22.1 and later: the package's Node 24; a
// checkout's Node 20 has none and compiles as usual) and imports the main chunk. The cache lives in
// NODE_COMPILE_CACHE when it is set (the unit sets it to its CacheDirectory=, /var/cache/terminal-agent),
// else in the system's temporary folder (Node's default): Node checks each entry against the
// source and its own version, so a stale entry is only a miss.
//
// What stays as tsc wrote it, next to the bundle:
// - every dist/<dir>/<file>.js: the tests and benchmarks import them, and the player child
//   (dist/audio/player-child.js) runs as a process of its own;
// - packages with a native addon (better-sqlite3, speaker, unix-dgram) and whatever is loaded
//   through createRequire (node-record-lpcm16) are loaded from node_modules at run time.
//
// Code that finds files relative to its own module (import.meta.url: the player child, the
// recorder shim, package.json, createRequire) would see the chunk's URL instead; the plugin below
// gives each source file the URL of its tsc output, so those paths resolve as before.
import { build, transform } from 'esbuild';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPlacement, placeSymlink } from './place-file.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
const OUT = join(DIST, 'bundle');
const META = join(DIST, 'bundle-meta.json');
// Packages with a native addon, loaded from node_modules at run time.
const NATIVE = ['better-sqlite3', 'speaker', 'unix-dgram'];

/** import.meta.url of src/a/b.ts becomes the file URL of dist/a/b.js (the chunks are in dist/bundle/). */
const tscUrls = {
  name: 'tsc-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url') && !source.includes('import.meta.dirname')) return undefined;
      const rel = relative(SRC, args.path).replace(/\.ts$/, '.js').split('\\').join('/');
      const relDir = rel.includes('/') ? `/${rel.slice(0, rel.lastIndexOf('/'))}` : '';
      const dir = `(__dirname.slice(0, __dirname.lastIndexOf("/")) + ${JSON.stringify(relDir)})`;
      // The import goes last: a file may start with a #! line (imports are hoisted anyway).
      const contents = `${source
        .replaceAll('import.meta.url', `__taFileUrl(${dir} + ${JSON.stringify(`/${basename(rel)}`)}).href`)
        .replaceAll('import.meta.dirname', dir)}\nimport { pathToFileURL as __taFileUrl } from 'node:url';\n`;
      return { contents, loader: 'ts' };
    });
  },
};

/** `yaml` from its ES module build, which esbuild can tree-shake (the CommonJS one it bundles whole). */
const esmYaml = {
  name: 'esm-yaml',
  setup(b) {
    b.onResolve({ filter: /^yaml$/ }, () => ({ path: join(ROOT, 'node_modules', 'yaml', 'browser', 'dist', 'index.js') }));
  },
};


/**
 * pino's parts that would load Node's worker_threads and assert for nothing (about 0.4 MB of a
 * daemon's resident memory, ten built-in modules): the agent logs on its main thread to stdout or
 * the journal, never through a transport (a worker thread), and sonic-boom asserts one argument.
 * - thread-stream (pino.transport only): a class that refuses to be made;
 * - worker_threads, for pino's `isMainThread` (whether to flush on exit): the bundle runs pino on
 *   the main thread only;
 * - assert, for sonic-boom and thread-stream: the same check, with Node's error code.
 */
const PINO_STUBS = {
  'thread-stream': "module.exports = class ThreadStream { constructor() { throw new Error('pino transports (worker threads) are not part of the terminal-agent bundle'); } };",
  worker_threads: 'module.exports = { isMainThread: true };',
  assert: "module.exports = function assert(value, message) { if (!value) throw Object.assign(new Error(message ?? 'assertion failed'), { code: 'ERR_ASSERTION' }); };",
};
const slimPino = {
  name: 'slim-pino',
  setup(b) {
    const fromPino = (importer) => /\/node_modules\/(pino|sonic-boom|thread-stream)\//.test(importer);
    b.onResolve({ filter: /^thread-stream$/ }, () => ({ path: 'thread-stream', namespace: 'pino-stub' }));
    b.onResolve({ filter: /^(node:)?(worker_threads|assert)$/ }, (args) =>
      fromPino(args.importer) ? { path: args.path.replace(/^node:/, ''), namespace: 'pino-stub' } : undefined);
    b.onLoad({ filter: /.*/, namespace: 'pino-stub' }, (args) => ({ contents: PINO_STUBS[args.path], loader: 'js' }));
  },
};

// A daemon or a `terminal-agent demo` may be running from this tree, and it loads chunks lazily
// (a command group, the console): dist/bundle/ is not emptied first. Each file is put in place by
// a rename (a reader sees the old file or the new one, whole), dist/main.js last, and only then are
// the files this build did not write removed. A chunk whose text did not change keeps its name
// (esbuild names it for its content), so a running process finds every file it may still need.
const placed = buildPlacement();
const place = (name, data, mode) => placed.text(join(OUT, name), data, mode);

// A fresh clone's first build: tsc has made dist/, not dist/bundle/.
await mkdir(OUT, { recursive: true });
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { main: join(SRC, 'main.ts') },
  entryNames: '[name]-[hash]',
  outdir: OUT,
  write: false,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  external: NATIVE,
  // Smaller files parse faster; identifiers are not minified, so stack traces stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // src/version.ts: the version built in, not read from package.json by every command.
  define: { __TA_PACKAGE_VERSION__: JSON.stringify(JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).version) },
  metafile: true,
  logLevel: 'warning',
  plugins: [tscUrls, slimPino, esmYaml],
});

let mainChunk;
for (const file of result.outputFiles) {
  const name = basename(file.path);
  const code = await transform(file.text.replace(/^#!.*\n/, ''), {
    format: 'cjs',
    loader: 'js',
    platform: 'node',
    target: 'node20.19',
    // `await import('./chunk.js')` becomes a lazy require of that chunk.
    supported: { 'dynamic-import': false },
    minifyWhitespace: true,
    logLevel: 'warning',
  });
  if (/\bimport\(/.test(code.code)) throw new Error(`${name}: an import() survived the CommonJS conversion`);
  place(name, code.code);
  if (/^main-[A-Z0-9]{8}\.js$/.test(name)) mainChunk = name;
}
if (!mainChunk) throw new Error('bundle: no main chunk in the output');

// Every command's words, options and help, from the tsc build of the same sources (src/cli/command-index.ts).
const { buildCommandIndex } = await import(join(DIST, 'cli', 'command-index.js'));
place('commands.idx', await buildCommandIndex());
// Kept for the start-up test (which chunk holds which module) and for anyone asking why a chunk is large.
await writeFile(META, JSON.stringify(result.metafile));
place('package.json', '{ "type": "commonjs" }\n');
place('main.cjs', `#!/usr/bin/env -S node --use-openssl-ca
// The terminal-agent CLI and daemon (dist/main.js links here), written by scripts/bundle.mjs.
// --use-openssl-ca: the system's CAs, as the unit's daemon trusts them (src/client/trust.ts).
// The compile cache is Node's own (Node 22.1 and later; in NODE_COMPILE_CACHE, else the temporary
// folder); Node 20 has none.
require('node:module').enableCompileCache?.();
require('./${mainChunk}');
`, 0o755);
placeSymlink('bundle/main.cjs', join(DIST, 'main.js'));
// What this build did not write: chunks of other texts, a crashed build's temporary files.
placed.removeUnwritten(OUT);
