// `npm run build:native` (part of `npm run build`): compiles the agent's own addon,
// native/malloc-trim (see its malloc_trim.c), with node-gyp, and puts it at
// dist/native/malloc_trim.node, where src/util/malloc-trim.ts looks for it. npm puts its own
// node-gyp on the PATH of every script and passes its config (nodedir) to it, as for the
// dependencies' addons that `npm ci` compiles; run outside npm, node-gyp is looked for in npm's
// install. The package (packaging/build.sh) compiles it again for its target CPU.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { placeFile } from './place-file.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'native/malloc-trim');
const OUT = join(ROOT, 'dist/native');

function nodeGyp() {
  const onPath = spawnSync('node-gyp', ['--version'], { stdio: 'ignore' });
  if (onPath.status === 0) return ['node-gyp'];
  const npmDir = join(dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
  if (existsSync(npmDir)) return [process.execPath, npmDir];
  throw new Error('node-gyp not found: run this through npm (npm run build), which provides it');
}

const [cmd, ...pre] = nodeGyp();
const r = spawnSync(cmd, [...pre, 'rebuild', '--release', '--loglevel=warn'], { cwd: SRC, stdio: ['ignore', 'ignore', 'inherit'] });
if (r.status !== 0) {
  console.error(`build-native: node-gyp failed in ${SRC} (exit ${r.status ?? r.signal}); it needs build-essential and python3, as better-sqlite3 does`);
  process.exit(1);
}
mkdirSync(OUT, { recursive: true });
// Renamed into place, not copied over: a daemon running from this dist/ has it loaded (place-file.mjs).
placeFile(join(SRC, 'build/Release/malloc_trim.node'), join(OUT, 'malloc_trim.node'));
