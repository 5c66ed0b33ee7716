// `npm run build:bundle` (part of `npm run build`, after tsc): replaces dist/main.js with an esbuild
// bundle of src/main.ts and its dependencies, split at every `await import()` into chunks beside it
// (dist/*-HASH.js). Why: Node's ESM loader resolves, reads and compiles each of the ~550 files the
// daemon loads one by one (undici alone is 110 files); one file per split point costs a fraction
// of that, and each CLI command still loads only the chunks it imports. See README "Performance".
//
// What stays as tsc wrote it, next to the bundle:
// - every dist/<dir>/<file>.js: the tests and benchmarks import them, and the player child
//   (dist/audio/player-child.js) runs as a process of its own;
// - native packages (better-sqlite3, speaker, unix-dgram) and whatever is loaded through
//   createRequire (node-record-lpcm16) are loaded from node_modules at run time.
//
// Code that finds files relative to its own module (import.meta.url: the player child, the
// recorder shim, package.json, createRequire) would see the chunk's URL instead; the plugin below
// gives each source file the URL of its tsc output, so those paths resolve as before.
import { build } from 'esbuild';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
const META = join(DIST, 'bundle-meta.json');
const NATIVE = ['better-sqlite3', 'speaker', 'unix-dgram'];

/** import.meta.url of src/a/b.ts becomes the URL of dist/a/b.js, computed from the chunk's own URL. */
const tscUrls = {
  name: 'tsc-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const rel = relative(SRC, args.path).replace(/\.ts$/, '.js').split('\\').join('/');
      // Chunks live in dist/ itself, so the tsc output is at ./<rel> from any chunk.
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(`./${rel}`)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

/** `undici` is scripts/undici-slim.cjs: the parts of undici the agent uses (see that file). */
const slimUndici = {
  name: 'slim-undici',
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, () => ({ path: join(ROOT, 'scripts', 'undici-slim.cjs') }));
  },
};

// Chunks of the previous build: their names change with their content.
async function removePreviousChunks() {
  let old;
  try {
    old = JSON.parse(await readFile(META, 'utf8'));
  } catch {
    old = { outputs: {} };
  }
  const previous = new Set(Object.keys(old.outputs ?? {}).map((p) => join(ROOT, p)));
  const pattern = /^[\w.-]+-[A-Z0-9]{8}\.js(\.map)?$/;
  for (const name of await readdir(DIST)) {
    const path = join(DIST, name);
    if (previous.has(path) || pattern.test(name)) await rm(path, { force: true });
  }
}

await removePreviousChunks();
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { main: join(SRC, 'main.ts') },
  outdir: DIST,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  external: NATIVE,
  // CommonJS dependencies (pino, prom-client, yaml ...) call require() for node: built-ins.
  banner: { js: "import { createRequire as __taCreateRequire } from 'node:module'; const require = __taCreateRequire(import.meta.url);" },
  // Smaller files parse faster; identifiers are not minified, so stack traces stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  plugins: [tscUrls, slimUndici],
});
// Kept for the start-up test (which chunk holds which module) and for anyone asking why a chunk is large.
await writeFile(META, JSON.stringify(result.metafile));
