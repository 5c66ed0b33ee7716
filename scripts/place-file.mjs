// Puts a built file in place the way dpkg does: a copy beside it, then a rename over it. Never a
// copy over it: a running process (the daemon, `terminal-agent demo`) that has the old file loaded
// as a native addon has it mapped, and rewriting that file in place kills the process at its next
// call into it: SIGBUS while the file is short, SIGSEGV after (truncating a mapped file drops even
// the pages the dynamic linker had relocated, which come back from the file unrelocated), even
// when the new bytes are the same. Renamed over, the old file lives on unlinked until the last
// process using it exits.
// The bundle's chunks go in place the same way (placeText): a running process loads them lazily, and
// a file it reads half written would fail it with a syntax error (scripts/bundle.mjs).
import { copyFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
