// Copied by scripts/bundle.mjs to dist/bundle/loader.cjs: loads the CommonJS chunks of the bundle
// (dist/bundle/*.js, converted from esbuild's ESM split output) with V8's code cache.
//
// Why not Node's own loaders: Node 20 has no compile cache (module.enableCompileCache is Node 22),
// and its ESM loader costs a few ms per process and per module before any of our code runs; a CLI
// call must cost little more than a bare `node`. A chunk compiled from its cache skips parsing and
// compiling the functions that were run when the cache was made (scripts/code-cache.cjs, at build
// time): for `config check` that is most of zod's and yaml's start-up cost.
//
// Safety of the cache: V8 checks its own version, the V8 flags and the source's length, and falls
// back to compiling when they differ (cachedDataRejected); every chunk's name holds a hash of its
// content, so an edited chunk never meets the cache of another text of the same length. A cache
// file is named for the node options the process runs with (the daemon with the unit's
// NODE_OPTIONS, V8 flags that change what V8 accepts; the CLI without), so each finds the caches
// made its way. The name only picks the file: V8 still checks the flags it was made with.
// (v8.cachedDataVersionTag() would say it exactly, but node:v8 costs every CLI call 2-5 ms.)
'use strict';
const { Script } = require('node:vm');
const { readFileSync, writeFileSync, renameSync } = require('node:fs');
const { join } = require('node:path');
const { createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');

// __taSourceUrl(rel): what import.meta.url was in the source file src/<rel as .ts> (bundle.mjs),
// the URL of its tsc output dist/<rel>, so files found beside it are found as before.
const WRAP_HEAD = '(function (exports, require, module, __filename, __dirname, __taSourceUrl) {';
const WRAP_TAIL = '\n})';

/** FNV-1a of the node options, in hex: a short file-name part. */
function flagsKey(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16);
}

/**
 * A loader for the chunks in `dir`; `load(name)` runs a chunk once and returns its exports.
 *
 * `transient` (scripts/bundle.mjs, from the build's chunk graph): { root chunk: [chunks only it
 * imports] }. A root runs afresh for each `load`, with its own copies of those chunks, and nothing
 * here keeps them: once its caller drops the exports, V8 frees their code and data. The daemon
 * reads its config that way (zod and the YAML parser are then not resident between reads). Every
 * other chunk is shared as usual, so classes and state outside the group have one copy.
 * `keepScripts` (build time only) keeps each compiled script for writeCodeCache.
 */
function createChunkLoader(dir, { transient = {}, keepScripts = false } = {}) {
  const nodeRequire = createRequire(join(dir, 'loader.cjs'));
  const sourceUrl = (rel) => pathToFileURL(join(dir, '..', rel)).href;
  const cacheSuffix = `.${flagsKey([...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' '))}.v8`;
  const scripts = new Map();
  const fromCache = new Map();

  function run(name, module, requireFrom) {
    const file = dir + '/' + name;
    const source = readFileSync(file, 'utf8');
    let cachedData;
    try {
      cachedData = readFileSync(file + cacheSuffix);
    } catch {
      cachedData = undefined;
    }
    const script = new Script(WRAP_HEAD + source + WRAP_TAIL, { filename: file, cachedData });
    fromCache.set(name, cachedData !== undefined && !script.cachedDataRejected);
    if (keepScripts) scripts.set(name, script);
    script.runInThisContext()(module.exports, requireFrom, module, file, dir, sourceUrl);
    module.loaded = true;
  }

  /** Chunks by name, loaded at most once into `modules`; names outside `members` go to `outer`. */
  function scope(modules, members, outer) {
    function requireFrom(id) {
      // The converted chunks name each other './chunk-XXXX.js'; anything else (node: built-ins, the
      // native packages left out of the bundle) is Node's.
      return id.startsWith('./') ? loadIn(id.slice(2)) : nodeRequire(id);
    }
    requireFrom.resolve = nodeRequire.resolve;
    requireFrom.cache = nodeRequire.cache;
    requireFrom.main = nodeRequire.main;

    function loadIn(name) {
      if (members !== undefined && !members.has(name)) return outer(name);
      const known = modules.get(name);
      if (known) return known.exports;
      if (members === undefined && transient[name]) {
        return scope(new Map(), new Set([name, ...transient[name]]), loadIn)(name);
      }
      const file = dir + '/' + name;
      const module = { exports: {}, filename: file, id: file, loaded: false };
      modules.set(name, module);
      run(name, module, requireFrom);
      return module.exports;
    }
    return loadIn;
  }
  const load = scope(new Map(), undefined, undefined);

  /** Writes the code cache of every chunk run so far (build time only: scripts/code-cache.cjs). */
  function writeCodeCache() {
    const written = [];
    for (const [name, script] of scripts) {
      const file = join(dir, name + cacheSuffix);
      writeFileSync(`${file}.tmp`, script.createCachedData());
      renameSync(`${file}.tmp`, file);
      written.push(name);
    }
    return written;
  }

  /** Chunks run so far and whether each (the last time it ran) came from its code cache (for the start-up test). */
  function loaded() {
    return [...fromCache].map(([name, cached]) => ({ name, cached }));
  }

  return { load, writeCodeCache, loaded };
}

module.exports = { createChunkLoader };
