// Puts a built file in place the way dpkg does: a copy beside it, then a rename over it. Never a
// copy over it: a running process (the daemon, `terminal-agent demo`) that has the old file loaded
// as a native addon has it mapped, and rewriting that file in place kills the process at its next
// call into it: SIGBUS while the file is short, SIGSEGV after (truncating a mapped file drops even
// the pages the dynamic linker had relocated, which come back from the file unrelocated), even
// when the new bytes are the same. Renamed over, the old file lives on unlinked until the last
// process using it exits.
// The bundle's chunks go in place the same way (placeText): a running process loads them lazily, and
// a file it reads half written would fail it with a syntax error (scripts/bundle.mjs).
import { copyFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Copies `src` to `dest` through a temporary name in dest's folder, then renames it over `dest`. */
export function placeFile(src, dest) {
  throughTemporary(dest, (tmp) => copyFileSync(src, tmp));
}

function throughTemporary(dest, make) {
  const tmp = join(dirname(dest), `.${basename(dest)}.${process.pid}.tmp`);
  try {
    make(tmp);
    renameSync(tmp, dest);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Writes `data` to `dest` the same way: a reader sees the old file or the new one, whole, never a part. */
export function placeText(dest, data, mode) {
  throughTemporary(dest, (tmp) => writeFileSync(tmp, data, mode === undefined ? undefined : { mode }));
}

/** Points the symlink `dest` at `target` with no moment where `dest` is missing. */
export function placeSymlink(target, dest) {
  throughTemporary(dest, (tmp) => symlinkSync(target, tmp));
}

/**
 * A build's files put in place one by one (placeText, placeFile) and remembered, so that what the
 * build did not write (an earlier build's files, a killed build's temporary ones) is removed only at
 * its end: a process running from the tree finds every file it may still need meanwhile
 * (scripts/bundle.mjs, web/build.mjs).
 */
export function buildPlacement() {
  const written = new Set();
  return {
    text(dest, data, mode) {
      placeText(dest, data, mode);
      written.add(dest);
    },
    file(src, dest) {
      placeFile(src, dest);
      written.add(dest);
    },
    has: (path) => written.has(path),
    /** Removes what is in `dir` and was not written, unless `keep(path)`. */
    removeUnwritten(dir, keep = () => false) {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (!written.has(path) && !keep(path)) rmSync(path, { recursive: true, force: true });
      }
    },
  };
}
