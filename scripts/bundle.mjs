// `npm run build:bundle` (part of `npm run build`, after tsc): replaces dist/main.js with an esbuild
// bundle of src/main.ts and its dependencies, split at every `await import()`, as CommonJS chunks
// in dist/bundle/ that scripts/chunk-loader.cjs loads with V8's code cache. Why (README
// "Performance"): Node's ESM loader resolves, reads and compiles each of the ~550 files the daemon
// loads one by one; one file per split point costs a fraction of that, each command still loads
// only the chunks it imports, and a chunk compiled from its cache skips most of its compile cost.
//
// Steps:
// 1. esbuild splits src/main.ts into ESM chunks (in memory);
// 2. each chunk is converted to CommonJS (esbuild transform: `import` becomes `require`, an
//    `await import()` a lazy `require`) and written to dist/bundle/<name>-<hash>.js;
// 3. dist/bundle/main.cjs (the entry: the loader's code, then a call) loads the main chunk, and dist/main.js
//    is a symlink to it: Node picks the module format from the real path, so the entry is
//    CommonJS (no ESM loader at all) while dist/main.js stays the path the unit, the package and
//    the tests run;
// 4. the command index (src/cli/command-index.ts) goes to dist/bundle/commands.idx;
// 5. scripts/make-code-caches.cjs runs a few commands to write each chunk's code cache
//    (<chunk>.<key>.v8).
//
// What stays as tsc wrote it, next to the bundle:
// - every dist/<dir>/<file>.js: the tests and benchmarks import them, and the player child
//   (dist/audio/player-child.js) runs as a process of its own;
// - native packages (speaker, unix-dgram; better-sqlite3's addon) and whatever is loaded through
//   createRequire (node-record-lpcm16) are loaded from node_modules at run time.
//
// Code that finds files relative to its own module (import.meta.url: the player child, the
// recorder shim, package.json, createRequire) would see the chunk's URL instead; the plugin below
// gives each source file the URL of its tsc output, so those paths resolve as before.
import { build, transform } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPlacement, placeSymlink } from './place-file.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
const OUT = join(DIST, 'bundle');
const META = join(DIST, 'bundle-meta.json');
// Packages with a native addon, loaded from node_modules at run time (better-sqlite3's JavaScript
// is bundled; its addon is found through scripts/sqlite-bindings.cjs).
const NATIVE = ['speaker', 'unix-dgram'];

/** import.meta.url of src/a/b.ts becomes the file URL of dist/a/b.js (chunks run as CommonJS in dist/bundle/). */
const tscUrls = {
  name: 'tsc-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url') && !source.includes('import.meta.dirname')) return undefined;
      const rel = relative(SRC, args.path).replace(/\.ts$/, '.js').split('\\').join('/');
      // import.meta.dirname: dist/<dir of rel>, from the chunk's own __dirname (dist/bundle), with
      // no URL to build and parse (about 0.3 M instructions of node:url's code for `status`).
      const relDir = rel.includes('/') ? `/${rel.slice(0, rel.lastIndexOf('/'))}` : '';
      const dirname = `(__dirname.slice(0, __dirname.lastIndexOf("/")) + ${JSON.stringify(relDir)})`;
      // __taSourceUrl: given to every chunk by the loader (a module may shadow `require`).
      const contents = source.replaceAll('import.meta.url', `__taSourceUrl(${JSON.stringify(rel)})`).replaceAll('import.meta.dirname', dirname);
      return { contents, loader: 'ts' };
    });
  },
};

/** `bindings` (better-sqlite3's addon finder) is scripts/sqlite-bindings.cjs. */
const sqliteBindings = {
  name: 'sqlite-bindings',
  setup(b) {
    b.onResolve({ filter: /^bindings$/ }, () => ({ path: join(ROOT, 'scripts', 'sqlite-bindings.cjs') }));
    // The addon itself is Node's to load, from the package.
    b.onResolve({ filter: /^better-sqlite3\/build\// }, (args) => ({ path: args.path, external: true }));
  },
};

/** `yaml` from its ES module build, which esbuild can tree-shake (the CommonJS one it bundles whole). */
const esmYaml = {
  name: 'esm-yaml',
  setup(b) {
    b.onResolve({ filter: /^yaml$/ }, () => ({ path: join(ROOT, 'node_modules', 'yaml', 'browser', 'dist', 'index.js') }));
  },
};

// Modules the daemon runs only now and then, loaded afresh each time and released after (see
// chunk-loader.cjs): the config reader, with zod and the YAML parser (read at start and on SIGHUP),
// and the YAML parser on its own (`status` reads the control socket's path with it when the config
// is unusual). Source files only the CLI runs import them with `await import()`, as the daemon does.
const TRANSIENT = ['src/config/load-config.ts', 'src/config/yaml-plain.ts'];

/**
 * { chunk of each TRANSIENT module: [chunks only it imports] }: the chunks its static imports
 * reach, less any that a chunk outside every such group imports (that one's copy is shared by
 * everyone; a chunk in two groups has a copy in each). A chunk dropped is outside too, so its
 * own imports are looked at again, until nothing changes.
 */
function transientGroups(metafile, sources) {
  const outputs = Object.fromEntries(Object.entries(metafile.outputs).map(([path, o]) => [basename(path), o]));
  const importsOf = (name) => (outputs[name]?.imports ?? []).filter((i) => i.kind !== 'dynamic-import' && outputs[basename(i.path)]).map((i) => basename(i.path));
  const groups = new Map();
  for (const source of sources) {
    const root = Object.keys(outputs).find((name) => outputs[name].entryPoint === source);
    if (!root) throw new Error(`bundle: no chunk has ${source} as its entry point`);
    const members = new Set();
    const todo = importsOf(root);
    while (todo.length > 0) {
      const name = todo.pop();
      if (members.has(name)) continue;
      members.add(name);
      todo.push(...importsOf(name));
    }
    groups.set(root, members);
  }
  const inGroups = (name) => groups.has(name) || [...groups.values()].some((m) => m.has(name));
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, o] of Object.entries(outputs)) {
      if (inGroups(name)) continue;
      for (const i of o.imports) {
        for (const members of groups.values()) if (members.delete(basename(i.path))) changed = true;
      }
    }
  }
  return Object.fromEntries([...groups].map(([root, members]) => [root, [...members].sort()]));
}

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
// a rename (a reader sees the old file or the new one, whole), main.cjs last, and only then are the
// files this build did not write removed. A chunk whose text did not change keeps its name (named
// for its content), so a running process finds every file it may still need throughout; one whose
// text changed is gone after the build, and a process that still wanted the old one says it was
// replaced (scripts/chunk-loader.cjs), as after an upgrade.
const placed = buildPlacement();
const place = (name, data, mode) => placed.text(join(OUT, name), data, mode);
const copyIn = (name, from) => placed.file(from, join(OUT, name));

// Chunks of the ESM bundle that came before dist/bundle/ lay in dist/ itself.
async function removePreviousChunks() {
  const pattern = /^[\w.-]+-[A-Z0-9]{8}\.js(\.map)?$/;
  for (const name of await readdir(DIST)) {
    if (pattern.test(name) || name === 'main.js.map') await rm(join(DIST, name), { force: true });
  }
}

await removePreviousChunks();
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
  plugins: [tscUrls, sqliteBindings, slimPino, esmYaml],
});

// esbuild's CommonJS interop, for chunks that only the loader requires (every `exports` object is
// made by __toCommonJS, and every `import()` became __toESM(require())). Its helpers copy each
// chunk's exports onto a new object as getters, and again for each import(): one property
// definition and one closure per export and per copy. The chunk's own exports object (its getters
// already live bindings) is marked and used as is instead: `status` 0.6 M instructions less.
// Anything else (a built-in module, a native package) still goes through esbuild's own code.
const INTEROP = [
  ['var __toCommonJS=mod=>__copyProps(__defProp({},"__esModule",{value:true}),mod);', 'var __toCommonJS=mod=>__defProp(mod,"__esModule",{value:true});'],
  ['var __toESM=(mod,isNodeMode,target)=>(', 'var __toESM=(mod,isNodeMode,target)=>mod!=null&&mod.__esModule&&!isNodeMode?mod:('],
];
function slimInterop(name, code) {
  let out = code;
  for (const [from, to] of INTEROP) {
    const helper = from.slice(0, from.indexOf('=') + 1);
    if (!out.includes(helper)) continue;
    // Another esbuild may write them otherwise: the build says so rather than ship a chunk half converted.
    if (!out.includes(from)) throw new Error(`bundle: ${name}: esbuild's ${helper.slice(4, -1)} is not the one scripts/bundle.mjs knows (INTEROP)`);
    out = out.replace(from, to);
  }
  return out;
}

await mkdir(OUT, { recursive: true });
let mainChunk;
const chunks = new Map();
for (const file of result.outputFiles) {
  const name = basename(file.path);
  // A shebang line would not survive the function wrapper the loader puts around each chunk.
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
  chunks.set(name, slimInterop(name, code.code));
  if (/^main-[A-Z0-9]{8}\.js$/.test(name)) mainChunk = name;
}
if (!mainChunk) throw new Error('bundle: no main chunk in the output');

// The pack: one file for the chunks every command loads (the main chunk and what it imports,
// which esbuild splits off because later chunks import them too) and for every small chunk.
// Each chunk costs a command two file reads and one compile however small it is (about 0.15 ms;
// `status` read 15 of them); in the pack a chunk is defined up front and runs when first
// required, as before. Larger chunks (zod, yaml, the daemon's parts) stay files of their own,
// read only by the commands that need them.
const PACK_MAX_BYTES = 2048;
// A transient chunk (transientGroups above) runs afresh from its own file at each load: never in the pack.
const transient = transientGroups(result.metafile, TRANSIENT);
const transientChunks = new Set(Object.entries(transient).flat(2));
const staticImports = (name) => (result.metafile.outputs[`dist/bundle/${name}`]?.imports ?? [])
  .filter((i) => i.kind === 'import-statement' && i.path.startsWith('dist/bundle/')).map((i) => basename(i.path));
const packed = new Set([mainChunk]);
for (const name of packed) for (const dep of staticImports(name)) packed.add(dep);
for (const [name, code] of chunks) if (code.length <= PACK_MAX_BYTES && !transientChunks.has(name)) packed.add(name);
for (const name of packed) if (transientChunks.has(name)) throw new Error(`bundle: transient chunk ${name} is imported statically by the pack`);

// esbuild's CommonJS conversion starts each chunk with its runtime helpers (__defProp, __export,
// __toCommonJS...), `var` statements whose text is the same in every chunk. A pack declares them
// once, at its top (the pack's function scope, which every chunk's function sees), so a chunk that
// runs no longer compiles, caches and runs copies of its own: `status` 0.7 M and `--help` 0.6 M
// instructions less, the main pack 87 KB -> 57 KB.
const ESBUILD_HELPERS = new Set(['__create', '__defProp', '__getOwnPropDesc', '__getOwnPropNames', '__getProtoOf', '__hasOwnProp', '__export', '__copyProps', '__toESM', '__toCommonJS', '__commonJS', '__esm', '__require', '__name', '__reExport', '__publicField']);

/** Index of the `;` that ends the statement starting at `at` (helper code: no regular expression literals). */
function statementEnd(code, at) {
  let depth = 0;
  let quote;
  for (let i = at; i < code.length; i++) {
    const c = code[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (c === ';' && depth === 0) return i;
  }
  throw new Error('bundle: a helper statement without its end');
}

/** A chunk's leading helper statements, and the rest of its code. */
function splitHelpers(code) {
  const helpers = [];
  let at = 0;
  for (let m; (m = /^var (__\w+)=/.exec(code.slice(at, at + 80))) && ESBUILD_HELPERS.has(m[1]);) {
    const end = statementEnd(code, at);
    helpers.push(code.slice(at, end + 1));
    at = end + 1;
  }
  return { helpers, body: code.slice(at) };
}

/** Writes a pack of `names` (in that order), their helpers declared once; returns its file name. */
async function writePack(names) {
  const helpers = new Set();
  const bodies = names.map((name) => {
    const split = splitHelpers(chunks.get(name));
    for (const h of split.helpers) helpers.add(h);
    return `__taDefineChunk(${JSON.stringify(name)},function(exports,require,module,__filename,__dirname,__taSourceUrl){${split.body}\n});\n`;
  });
  // Each helper name once: two texts for one name would give some chunk the other's.
  const declared = [...helpers].flatMap((h) => [...h.matchAll(/(?:^var |,)(__\w+)=/g)].map((m) => m[1]));
  const twice = declared.filter((n, i) => declared.indexOf(n) !== i);
  if (twice.length > 0) throw new Error(`bundle: esbuild helpers with two texts: ${twice.join(', ')}`);
  const text = `${[...helpers].join('')}\n${bodies.join('')}`;
  // Named for its content, as esbuild names chunks, so a code cache never meets another text.
  const name = `pack-${createHash('sha256').update(text).digest('hex').slice(0, 8).toUpperCase()}.js`;
  place(name, text);
  return name;
}
const packName = await writePack([...packed]);
for (const [name, code] of chunks) if (!packed.has(name)) place(name, code);

// Group packs: running a command imports its group (src/cli/commands.ts: the main chunk's dynamic
// imports), and with it every chunk the group imports statically. Those come in one more pack, read
// when the group is first required: `status` read 6 files (two reads and one compile each) where
// it now reads one, 3.8 M instructions of its 123 M. A chunk may be in several group packs; it
// still runs once (the loader keeps the first definition), and keeps its own file for anyone who
// requires it outside its group's packs (a chunk that a lazy import reaches first).
const groupPacks = {};
for (const group of result.metafile.outputs[`dist/bundle/${mainChunk}`].imports.filter((i) => i.kind === 'dynamic-import').map((i) => basename(i.path))) {
  const reached = [group];
  for (const name of reached) for (const dep of staticImports(name)) if (!reached.includes(dep)) reached.push(dep);
  const members = reached.filter((name) => !packed.has(name) && !transientChunks.has(name));
  if (members.length > 1) groupPacks[group] = await writePack(members);
}

copyIn('loader.cjs', join(ROOT, 'scripts', 'chunk-loader.cjs'));
place('transient.json', JSON.stringify(transient));
// For scripts/code-cache.cjs, which starts the CLI the same way, and for the start-up test.
place('main-chunk.json', JSON.stringify({ main: mainChunk, pack: packName, packed: [...packed], packs: groupPacks }));
// Every command's words, options and help, from the tsc build of the same sources (src/cli/command-index.ts).
const { buildCommandIndex } = await import(join(DIST, 'cli', 'command-index.js'));
place('commands.idx', await buildCommandIndex());
// The entry holds the loader itself: a require('./loader.cjs') would cost every command a second
// module resolution (with its package.json lookups), about 1 ms.
// Node compiles the entry on every start with no code cache: without its comments and blanks.
const loaderSource = (await transform(await readFile(join(ROOT, 'scripts', 'chunk-loader.cjs'), 'utf8'), { loader: 'js', minifyWhitespace: true, logLevel: 'warning' })).code;
place('main.cjs', `#!/usr/bin/env -S node --use-openssl-ca
// The terminal-agent CLI (dist/main.js links here): scripts/chunk-loader.cjs, then the pack and
// the main chunk. Written by scripts/bundle.mjs. --use-openssl-ca: the system's CAs, as the
// unit's daemon trusts them (src/client/trust.ts).
${loaderSource}
const loader = createChunkLoader(__dirname, { transient: ${JSON.stringify(transient)}, packs: ${JSON.stringify(groupPacks)} });
loader.loadPack(${JSON.stringify(packName)});
loader.load(${JSON.stringify(mainChunk)});
`, 0o755);
placeSymlink('bundle/main.cjs', join(DIST, 'main.js'));

// Kept for the start-up test (which chunk holds which module) and for anyone asking why a chunk is large.
await writeFile(META, JSON.stringify(result.metafile));

// Code caches (scripts/make-code-caches.cjs, shipped in dist/bundle/ so the Debian package makes
// them again on the device, where they fit its node and CPU), for the unit's NODE_OPTIONS.
for (const f of ['code-cache.cjs', 'make-code-caches.cjs']) copyIn(f, join(ROOT, 'scripts', f));
// What this build did not write: chunks of other texts, their code caches, a crashed build's
// temporary files. The code caches of the chunks still here stay until make-code-caches has
// written theirs (renamed over), so a process loading one meanwhile still finds a cache.
const cacheOf = (name) => /^(.+)\.[0-9a-f]+\.v8$/.exec(name)?.[1];
placed.removeUnwritten(OUT, (path) => {
  const chunk = cacheOf(basename(path));
  return chunk !== undefined && placed.has(join(OUT, chunk));
});
const cachesStarted = Date.now();
const made = spawnSync(process.execPath, [join(OUT, 'make-code-caches.cjs'), '--unit', join(ROOT, 'systemd', 'terminal-agent.service')], { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' });
// Start-up without them is slower, not wrong: say so, and go on.
if (made.status !== 0) process.stderr.write(`bundle: ${made.stderr || `make-code-caches exited ${made.status}`}`);
else {
  // A cache it did not write again is for node flags nothing runs with any more (the unit's changed).
  // A second of slack: a file's mtime comes from the kernel's coarse clock, a tick behind Date.now().
  for (const name of await readdir(OUT)) {
    if (cacheOf(name) !== undefined && (await stat(join(OUT, name))).mtimeMs < cachesStarted - 1000) await rm(join(OUT, name), { force: true });
  }
}
