// `node code-cache.cjs DIR MAIN_CHUNK ARGS...` (copied by scripts/bundle.mjs to dist/bundle/, run by
// make-code-caches.cjs) runs the CLI with ARGS through the chunk loader of DIR and, as the process
// exits, writes the V8 code cache of every chunk it ran (DIR/<chunk>.<key>.v8, see loader.cjs),
// including the functions compiled on the way.
// `node code-cache.cjs --report FILE DIR MAIN_CHUNK ARGS...` writes nothing to DIR: it puts in FILE
// which chunks ran and whether each came from its cache or V8 refused it (the package checks).
'use strict';
const { writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');

const argv = process.argv.slice(2);
const report = argv[0] === '--report' ? argv.splice(0, 2)[1] : undefined;
const [dirArg, mainChunk, ...args] = argv;
const dir = resolve(dirArg);
const loader = require(join(dir, 'loader.cjs')).createChunkLoader(dir);
process.argv = [process.argv[0], join(dir, 'main.cjs'), ...args];
process.on('exit', () => (report ? writeFileSync(report, JSON.stringify(loader.loaded())) : loader.writeCodeCache()));
loader.load(mainChunk);
