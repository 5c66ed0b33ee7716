import { mkdir as mkdirCallback, mkdirSync, stat as statCallback, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';

// `mkdir -p` that always ends. Node's own `mkdir(path, { recursive: true })` (checked on Node 20.20)
// spins forever at 100 % CPU when the parent exists but cannot hold the child: a path under /proc,
// a dangling symlink (a USB stick or SD card that is not mounted), some FUSE mounts. It reads
// ENOENT as "the parent is missing", makes the parent (EEXIST), and tries the child again, for
// ever; the sync form also blocks the event loop, so not even SIGTERM gets through. Here the
// missing folders are found first, then made top-down once each, and any error is final.
//
// Callback fs rather than node:fs/promises: opening agent.db loads this file, and `faces list
// --cached` would pay about 2 ms for fs/promises it never uses.

const stat = (path: string) => new Promise<Stats>((res, rej) => statCallback(path, (err, st) => (err ? rej(err) : res(st))));
const mkdir = (path: string, mode?: number) => new Promise<void>((res, rej) => mkdirCallback(path, mode, (err) => (err ? rej(err) : res())));

/** Creates `path` and its missing parents; returns the first folder created, as fs.mkdir does. */
export async function makeDir(path: string, mode?: number): Promise<string | undefined> {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    const st = await stat(p).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT' || dirname(p) === p) throw err;
      return undefined;
    });
    if (st) {
      if (!st.isDirectory()) throw notADirectory(p);
      break;
    }
    missing.unshift(p);
  }
  for (const dir of missing) {
    await mkdir(dir, mode).catch(async (err: NodeJS.ErrnoException) => {
      // Made meanwhile by another writer: fine if it is a folder (stat throws for a dangling link).
      if (err.code !== 'EEXIST' || !(await stat(dir)).isDirectory()) throw err;
    });
  }
  return missing[0];
}

/** makeDir for the few places that must stay synchronous (opening the database, the lock). */
export function makeDirSync(path: string, mode?: number): string | undefined {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    let isDir: boolean;
    try {
      isDir = statSync(p).isDirectory();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(p) === p) throw err;
      missing.unshift(p);
      continue;
    }
    if (!isDir) throw notADirectory(p);
    break;
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir, mode);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(dir).isDirectory()) throw err;
    }
  }
  return missing[0];
}

function notADirectory(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: 'ENOTDIR', syscall: 'mkdir', path });
}
