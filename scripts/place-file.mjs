// Puts a built file in place the way dpkg does: a copy beside it, then a rename over it. Never a
// copy over it: a running process (the daemon, `terminal-agent demo`) that has the old file loaded
// as a native addon has it mapped, and rewriting that file in place kills the process at its next
// call into it: SIGBUS while the file is short, SIGSEGV after (truncating a mapped file drops even
// the pages the dynamic linker had relocated, which come back from the file unrelocated), even
// when the new bytes are the same. Renamed over, the old file lives on unlinked until the last
// process using it exits.
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Copies `src` to `dest` through a temporary name in dest's folder, then renames it over `dest`. */
export function placeFile(src, dest) {
  const tmp = join(dirname(dest), `.${basename(dest)}.${process.pid}.tmp`);
  try {
    copyFileSync(src, tmp);
    renameSync(tmp, dest);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
