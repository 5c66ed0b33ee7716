// Build time (scripts/bundle.mjs): `node scripts/code-cache.cjs DIR ARGS...` runs the CLI with ARGS
// through the chunk loader of DIR, as DIR/main.cjs does, and, as the process exits, writes the V8
// code cache of every chunk and pack it read (DIR/<file>.<flags key>.v8, see chunk-loader.cjs),
// including the functions compiled on the way.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const [dir, ...args] = process.argv.slice(2);
const { main, pack } = JSON.parse(readFileSync(join(dir, 'main-chunk.json'), 'utf8'));
const loader = require(join(dir, 'loader.cjs')).createChunkLoader(dir);
process.argv = [process.argv[0], join(dir, 'main.cjs'), ...args];
process.on('exit', () => loader.writeCodeCache());
loader.loadPack(pack);
loader.load(main);
