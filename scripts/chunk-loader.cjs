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
// content, so an edited chunk never meets the cache of another text of the same length. V8 does
// NOT check the CPU: node 20.20 for arm64 accepts a cache made on x64 and crashed (SIGSEGV, under
// qemu) deserializing one of ours, so the CPU is part of the name and a cache made on another
// machine is never read. A cache file is named for that and for the node options the process runs
// with (the daemon with the unit's NODE_OPTIONS, V8 flags that change what V8 accepts; the CLI
// without), so each finds the caches made its way. The name only picks the file: V8 still checks
// the flags it was made with. (v8.cachedDataVersionTag() would say it exactly, but node:v8 costs
// every CLI call 2-5 ms.) The Debian package makes its caches on the device, in postinst
// (dist/bundle/make-code-caches.cjs); nothing here ever writes a cache outside that.
'use strict';
const { Script } = require('node:vm');
const { readFileSync, writeFileSync, renameSync } = require('node:fs');
const { join } = require('node:path');

// __taSourceUrl(rel): what import.meta.url was in the source file src/<rel as .ts> (bundle.mjs),
// the URL of its tsc output dist/<rel>, so files found beside it are found as before.
const WRAP_HEAD = '(function (exports, require, module, __filename, __dirname, __taSourceUrl) {';
const WRAP_TAIL = '\n})';
// A pack's text is a list of `__taDefineChunk("name.js", function (exports, require, ...) {...});`.
const PACK_HEAD = '(function (__taDefineChunk) {';

/** FNV-1a of the node options, in hex: a short file-name part. */
function flagsKey(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16);
}

/**
 * The file URL of an absolute path, as url.pathToFileURL gives it on POSIX, without loading
 * node:url (about 0.5 ms of every command): the characters the URL parser would not escape are
 * escaped here, and the pathname setter escapes the rest (space, ?, #, non-ASCII).
 */
function fileUrlOf(path) {
  const url = new URL('file://');
  url.pathname = path.replace(/[%\\\n\r\t]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return url.href;
}

/**
 * The bundle's chunks have content-hashed names, and some are read only when first needed: one
 * that is gone means another build was installed over the running one (the package's preinst stops
 * the daemon first, but a CLI call can straddle an upgrade).
 */
function missingChunk(file, cause) {
  const err = new Error(`${file} is missing: the installed terminal-agent was replaced while this process ran (an upgrade?); run the command again, or restart the daemon (systemctl restart terminal-agent)`, { cause });
  err.code = 'ERR_TA_CHUNK_MISSING';
  return err;
}

/**
 * A loader for the chunks in `dir`, which must be this file's own folder (dist/bundle: main.cjs
 * holds a copy of this file, code-cache.cjs requires loader.cjs from there): what the chunks
 * require from node_modules is resolved from there, by this file's own `require`.
 * `load(name)` runs a chunk once and returns its exports; `loadPack(name)` defines the chunks a
 * pack holds (see bundle.mjs), each run when first required, as if it were a file of its own.
 *
 * `transient` (scripts/bundle.mjs, from the build's chunk graph): { root chunk: [chunks only it
 * imports] }. A root runs afresh for each `load`, with its own copies of those chunks, and nothing
 * here keeps them: once its caller drops the exports, V8 frees their code and data. The daemon
 * reads its config that way (zod and the YAML parser are then not resident between reads). Every
 * other chunk is shared as usual, so classes and state outside the group have one copy. No
 * transient chunk is in a pack (bundle.mjs), so each fresh run reads its own file.
 * `packs` (bundle.mjs's group packs): { chunk: pack }: the pack is read before that chunk first
 * runs (a command group, and the chunks it imports, in one file).
 * `keepScripts` (code-cache.cjs only) keeps each compiled script for writeCodeCache.
 */
function createChunkLoader(dir, { transient = {}, packs = {}, keepScripts = false } = {}) {
  const nodeRequire = require;
  const sourceUrl = (rel) => fileUrlOf(join(dir, '..', rel));
  // --use-openssl-ca (the CLI's #! line and wrapper, the unit's NODE_OPTIONS) is node's own and
  // never reaches V8: left out, so `node dist/main.js` and the CLI with it share their caches.
  const cacheSuffix = `.${flagsKey([process.arch, ...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ').replace(/ --use-openssl-ca(?= |$)/g, ''))}.v8`;
  // A chunk's path: `dir` is absolute (__dirname) and chunk names are plain file names, so
  // path.join would only normalize what is normal already (its code, compiled on first use, cost
  // every command about 0.2 M instructions).
  const dirSlash = dir.endsWith('/') ? dir : `${dir}/`;
  const scripts = new Map();
  const fromCache = new Map();
  // Chunks defined by a pack, not yet run.
  const factories = new Map();
  const packsRead = new Set();

  /** Compiles the file `name` (from its code cache when there is one) wrapped in `head`; returns the function. */
  function compile(name, head) {
    const file = dirSlash + name;
    const source = readFileSync(file, 'utf8');
    let cachedData;
    try {
      cachedData = readFileSync(file + cacheSuffix);
    } catch {
      cachedData = undefined;
    }
    const script = new Script(head + source + WRAP_TAIL, { filename: file, cachedData });
    const rejected = cachedData !== undefined && script.cachedDataRejected === true;
    fromCache.set(name, { cached: cachedData !== undefined && !rejected, rejected });
    if (keepScripts) scripts.set(name, script);
    return script.runInThisContext();
  }

  function loadPack(name) {
    packsRead.add(name);
    compile(name, PACK_HEAD)((chunk, factory) => {
      if (!factories.has(chunk)) factories.set(chunk, factory);
    });
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
      // A chunk with a pack of its own (a command group and what it imports): that pack first.
      const pack = packs[name];
      if (pack !== undefined && !packsRead.has(pack)) loadPack(pack);
      const file = dirSlash + name;
      const module = { exports: {}, filename: file, id: file, loaded: false };
      modules.set(name, module);
      try {
        const factory = factories.get(name) ?? compile(name, WRAP_HEAD);
        factories.delete(name);
        factory(module.exports, requireFrom, module, file, dir, sourceUrl);
      } catch (err) {
        // As Node's require does: a chunk that failed is not kept half-run, so the next call tries
        // again instead of getting empty exports.
        modules.delete(name);
        throw err && err.code === 'ENOENT' && err.path === file ? missingChunk(file, err) : err;
      }
      module.loaded = true;
      return module.exports;
    }
    return loadIn;
  }
  const load = scope(new Map(), undefined, undefined);

  /** Writes the code cache of every chunk and pack read so far (code-cache.cjs only), each whole or not at all. */
  function writeCodeCache() {
    const written = [];
    for (const [name, script] of scripts) {
      const file = dirSlash + name + cacheSuffix;
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, file);
      written.push(name);
    }
    return written;
  }

  /** Chunks and packs read so far: whether each (the last time it was read) came from its code cache, or V8 refused the one it found. */
  function loaded() {
    return [...fromCache].map(([name, s]) => ({ name, cached: s.cached, rejected: s.rejected }));
  }

  return { load, loadPack, writeCodeCache, loaded };
}

module.exports = { createChunkLoader, fileUrlOf };
