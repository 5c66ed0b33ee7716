// Build time (scripts/bundle.mjs): `node scripts/code-cache.cjs DIR MAIN_CHUNK ARGS...` runs the CLI
// with ARGS through the chunk loader of DIR and, as the process exits, writes the V8 code cache of
// every chunk it ran (DIR/<chunk>.<flags key>.v8, see chunk-loader.cjs), including the functions compiled on the way.
'use strict';
const { join } = require('node:path');

const [dir, mainChunk, ...args] = process.argv.slice(2);
const transient = require(join(dir, 'transient.json'));
const loader = require(join(dir, 'loader.cjs')).createChunkLoader(dir, { transient, keepScripts: true });
process.argv = [process.argv[0], join(dir, 'main.cjs'), ...args];
process.on('exit', () => loader.writeCodeCache());
loader.load(mainChunk);
