import * as fs from 'node:fs';
import { promisify } from 'node:util';
import { AgentError } from '../errors.js';
import { fileTypeOf } from '../util/safe-open.js';
import { KINDS } from './types.js';

// enroll.dir is written by operators, who are not the daemon's user: any folder in it may be
// swapped for a symbolic link at any moment, to reach what only the daemon can read or write.
// Node has no openat2(RESOLVE_NO_SYMLINKS) and no *at() calls, but Linux resolves
// /proc/self/fd/N as the very folder descriptor N holds, whatever its name is now. So a folder
// under enroll.dir is reached one component at a time, each opened O_NOFOLLOW inside the one
// before (`/proc/self/fd/N/name`), and every read, move and write names its file as
// `/proc/self/fd/N/base`: the kernel looks `base` up in that folder and nowhere else, and
// rename(2), link(2) and O_EXCL/O_NOFOLLOW opens never follow a link in the last component.
//
// Links the administrator made are kept: a folder of the contract (done/, an inbox, done/<kind>)
// may be a link owned by root or the daemon's user, in a folder operators cannot rename entries
// of (sticky, or not writable by group and others), e.g. done/ on a USB stick. No other link is
// followed, and a folder of the contract must be owned by root or the daemon's user.

export type EnrollPathProblem = 'TA_ERR_ENROLL_LINK' | 'TA_ERR_ENROLL_NOT_FOLDER' | 'TA_ERR_ENROLL_FOLDER_OWNER';

export class EnrollPathError extends AgentError {
  override readonly code: EnrollPathProblem;
  constructor(code: EnrollPathProblem, message: string, rel: string) {
    super(message, { details: { path: rel } });
    this.code = code;
  }
}

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NONBLOCK;
const S_ISVTX = 0o1000;

/** A folder under enroll.dir, held open: names under `path` are looked up in it and nowhere else. */
export interface DirRef {
  readonly fd: number;
  /** `/proc/self/fd/N`. */
  readonly path: string;
  /** Relative to enroll.dir, POSIX style ('' for enroll.dir itself). */
  readonly rel: string;
  readonly st: fs.Stats;
}

/** A folder the contract names: an inbox, done/, failed/, or done/<kind> and failed/<kind>. */
export function isContractFolder(rel: string): boolean {
  const parts = rel.split('/');
  if (parts.length === 1) return parts[0] === 'done' || parts[0] === 'failed' || (KINDS as readonly string[]).includes(parts[0]!);
  return parts.length === 2 && (parts[0] === 'done' || parts[0] === 'failed') && (KINDS as readonly string[]).includes(parts[1]!);
}

/**
 * The mode a folder of enroll.dir gets when the daemon creates it, from enroll.dir's own: done/
 * and failed/ keep the sticky bit (operators cannot rename or remove done/faces), the folders
 * operators drop into and clear have none (they remove the daemon's result files too).
 */
export function folderModeFor(rel: string, rootMode: number): number {
  const mode = rootMode & 0o7777;
  return rel === 'done' || rel === 'failed' ? mode | S_ISVTX : mode & ~S_ISVTX;
}

/** Whether operators could rename entries of a folder with these stats (group or others may write, no sticky bit). */
function entriesMovable(st: fs.Stats): boolean {
  return (st.mode & 0o022) !== 0 && (st.mode & S_ISVTX) === 0;
}

interface Calls {
  open(path: string, flags: number): Promise<number>;
  close(fd: number): Promise<void>;
  fstat(fd: number): Promise<fs.Stats>;
  lstat(path: string): Promise<fs.Stats>;
  readlink(path: string): Promise<string>;
  mkdir(path: string, mode: number): Promise<void>;
  fchmod(fd: number, mode: number): Promise<void>;
}

const poolCalls: Calls = {
  open: (p, f) => promisify(fs.open)(p, f),
  close: promisify(fs.close),
  fstat: (fd) => promisify(fs.fstat)(fd),
  lstat: (p) => promisify(fs.lstat)(p),
  readlink: (p) => promisify(fs.readlink)(p),
  mkdir: async (p, m) => void (await promisify(fs.mkdir)(p, m)),
  fchmod: promisify(fs.fchmod),
};

// async functions: an error thrown in place reaches the caller as a rejection, as from the pool.
const loopCalls: Calls = {
  open: async (p, f) => fs.openSync(p, f),
  close: async (fd) => fs.closeSync(fd),
  fstat: async (fd) => fs.fstatSync(fd),
  lstat: async (p) => fs.lstatSync(p),
  readlink: async (p) => fs.readlinkSync(p),
  mkdir: async (p, m) => void fs.mkdirSync(p, m),
  fchmod: async (fd, m) => fs.fchmodSync(fd, m),
};

export interface ConfinedDirs {
  /**
   * Opens the folder `rel` under `root` without following a link it did not expect
   * (EnrollPathError otherwise); with `create`, makes the missing folders on the way, each with
   * folderModeFor's mode.
   */
  open(rel: string, create?: boolean): Promise<DirRef>;
  close(dir: DirRef): Promise<void>;
  /** open, fn, close. */
  with<T>(rel: string, create: boolean, fn: (dir: DirRef) => Promise<T>): Promise<T>;
}

/** `onLoop()`: whether calls are made on the event loop (enroll-fs.ts says when). */
export function createConfinedDirs(root: string, onLoop: () => boolean): ConfinedDirs {
  const uid = process.getuid?.() ?? 0;
  const trusted = (owner: number) => owner === 0 || owner === uid;

  async function step(c: Calls, parent: DirRef, name: string, create: boolean, rootMode: number): Promise<DirRef> {
    const rel = parent.rel ? `${parent.rel}/${name}` : name;
    const at = `${parent.path}/${name}`;
    let fd: number | undefined;
    try {
      fd = await c.open(at, DIR_FLAGS | O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && create) {
        await c.mkdir(at, 0o700).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        fd = await c.open(at, DIR_FLAGS | O_NOFOLLOW);
        await c.fchmod(fd, folderModeFor(rel, rootMode)).catch(() => undefined); // a vfat stick has no modes
      } else if (code === 'ELOOP' || code === 'ENOTDIR') {
        fd = await followExpected(c, parent, name, rel, at);
      } else {
        throw err;
      }
    }
    try {
      const st = await c.fstat(fd);
      if (isContractFolder(rel) && !trusted(st.uid)) {
        throw new EnrollPathError('TA_ERR_ENROLL_FOLDER_OWNER', `enroll.dir/${rel} is owned by uid ${st.uid}, not by the agent's user: it was replaced by someone else; nothing is moved or written there until it is removed (the agent makes it again)`, rel);
      }
      return { fd, path: `/proc/self/fd/${fd}`, rel, st };
    } catch (err) {
      await c.close(fd).catch(() => undefined);
      throw err;
    }
  }

  /** A link or a non-folder where a folder was expected: followed only when the administrator made it. */
  async function followExpected(c: Calls, parent: DirRef, name: string, rel: string, at: string): Promise<number> {
    const lst = await c.lstat(at);
    if (!lst.isSymbolicLink()) {
      throw new EnrollPathError('TA_ERR_ENROLL_NOT_FOLDER', `enroll.dir/${rel} is ${fileTypeOf(lst)}, not a folder`, rel);
    }
    if (isContractFolder(rel) && trusted(lst.uid) && !entriesMovable(parent.st)) return c.open(at, DIR_FLAGS);
    const target = await c.readlink(at).catch(() => '?');
    throw new EnrollPathError('TA_ERR_ENROLL_LINK', `enroll.dir/${rel} is a symbolic link (to ${target}); the agent follows no link an operator can make in enroll.dir: put the files themselves in a real folder`, rel);
  }

  async function open(rel: string, create = false): Promise<DirRef> {
    const c = onLoop() ? loopCalls : poolCalls;
    const fd = await c.open(root, DIR_FLAGS);
    let dir: DirRef;
    try {
      dir = { fd, path: `/proc/self/fd/${fd}`, rel: '', st: await c.fstat(fd) };
    } catch (err) {
      await c.close(fd).catch(() => undefined);
      throw err;
    }
    const rootMode = dir.st.mode;
    for (const name of rel ? rel.split('/') : []) {
      try {
        const next = await step(c, dir, name, create, rootMode);
        await c.close(dir.fd);
        dir = next;
      } catch (err) {
        await c.close(dir.fd).catch(() => undefined);
        throw err;
      }
    }
    return dir;
  }

  const close = async (dir: DirRef) => (onLoop() ? loopCalls : poolCalls).close(dir.fd);

  return {
    open,
    close,
    async with(rel, create, fn) {
      const dir = await open(rel, create);
      try {
        return await fn(dir);
      } finally {
        await close(dir).catch(() => undefined);
      }
    },
  };
}

/**
 * `dirs` where each folder is opened once and kept until `release()`: a batch of results going to
 * the same folders walks each path once.
 */
export function sharedDirs(dirs: ConfinedDirs): ConfinedDirs & { release(): Promise<void> } {
  const held = new Map<string, Promise<DirRef>>();
  const open = (rel: string, create = false): Promise<DirRef> => {
    const key = `${create ? '+' : ''}${rel}`;
    let dir = held.get(key);
    if (!dir) {
      dir = dirs.open(rel, create);
      held.set(key, dir);
    }
    return dir;
  };
  return {
    open,
    close: async () => undefined,
    with: async (rel, create, fn) => fn(await open(rel, create)),
    async release() {
      const all = [...held.values()];
      held.clear();
      for (const d of await Promise.allSettled(all)) if (d.status === 'fulfilled') await dirs.close(d.value).catch(() => undefined);
    },
  };
}

/** Splits `faces/carol/1.jpg` into its folder (`faces/carol`) and base name (`1.jpg`). */
export function splitRel(rel: string): { dir: string; base: string } {
  const slash = rel.lastIndexOf('/');
  return slash < 0 ? { dir: '', base: rel } : { dir: rel.slice(0, slash), base: rel.slice(slash + 1) };
}
