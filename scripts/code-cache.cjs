// `node code-cache.cjs DIR ARGS...` (copied by scripts/bundle.mjs to dist/bundle/, run by
// make-code-caches.cjs) runs the CLI with ARGS through the chunk loader of DIR, as DIR/main.cjs
// does, and, as the process exits, writes the V8 code cache of every chunk and pack it read
// (DIR/<file>.<key>.v8, see loader.cjs), including the functions compiled on the way.
// `node code-cache.cjs --report FILE DIR ARGS...` writes nothing to DIR: it puts in FILE which
// chunks ran and whether each came from its cache or V8 refused it (the package checks).
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');

const argv = process.argv.slice(2);
const report = argv[0] === '--report' ? argv.splice(0, 2)[1] : undefined;
const [dirArg, ...args] = argv;
const dir = resolve(dirArg);
const { main, pack, packs } = JSON.parse(readFileSync(join(dir, 'main-chunk.json'), 'utf8'));
const transient = JSON.parse(readFileSync(join(dir, 'transient.json'), 'utf8'));
const loader = require(join(dir, 'loader.cjs')).createChunkLoader(dir, { transient, packs, keepScripts: report === undefined });
process.argv = [process.argv[0], join(dir, 'main.cjs'), ...args];
// The daemon sets V8 flags after its first face sync (src/daemon/steady-v8-flags.ts):
// that changes V8's flag hash, and caches written after it would be refused at every start. The
// run that makes them keeps the flags; a --report run does as the installed daemon does.
if (report === undefined) process.env.TERMINAL_AGENT_CODE_CACHE_RUN = '1';
process.on('exit', () => (report ? writeFileSync(report, JSON.stringify(loader.loaded())) : loader.writeCodeCache()));
loader.loadPack(pack);
loader.load(main);
