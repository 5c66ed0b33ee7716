'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS file by design: it stands in for the `bindings` package */
// better-sqlite3's JavaScript is bundled (scripts/bundle.mjs): Node's own require would read and
// compile its 14 files without a code cache at every daemon start and `faces list --cached`. Its
// native addon stays in node_modules; the `bindings` package would look for it beside the calling
// file (the chunk, in dist/bundle/), so the bundle resolves `bindings` here, which loads it from
// the better-sqlite3 package itself. Only the bundle uses this file.
module.exports = function bindings(name) {
  if (name !== 'better_sqlite3.node') throw new Error(`sqlite-bindings.cjs: unexpected addon ${name}`);
  return require('better-sqlite3/build/Release/better_sqlite3.node');
};
