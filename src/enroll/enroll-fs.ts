import { linkSync, lstatSync, renameSync, statSync, writeFile, writeFileSync, type Stats } from 'node:fs';
import { link, lstat, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { kindFolders, type Layout } from './layout.js';
import { KINDS } from './types.js';

// The calls a burst makes on every file under enroll.dir: the stability look, the staging link,
// the check and move of the original into done/ or failed/, and the result file beside it. On
// the event loop when every folder the agent works in under enroll.dir is on state_dir's file
// system (the default: enroll.dir is state_dir/enroll), else through libuv's thread pool.
//
// Why: a pool trip costs tens of µs of the daemon's CPU (a pool thread's wake-up, an eventfd
// round, the event loop's wake-up) against a few µs for an lstat made in place, about ten per
// file in a burst. The
// pool is for a USB stick or a network share that hangs: a call on a hung mount would stall the
// event loop (and the watchdog would restart the daemon into the same hang). On state_dir's file
// system that risk is the daemon's already: agent.db is read and written on the event loop at
// every commit, and staging's files are too (util/state-fs.ts). Nothing here syncs (fsyncs stay
// on the pool) and nothing here reads or writes more than a result file's JSON.

/** fs.writeFile with callbacks: fs/promises' FileHandle (open, writeFile, close) costs more CPU per result file. */
const writeNewFile = promisify(writeFile);

export interface EnrollFs {
  /** True when calls are made on the event loop (decide() found one file system). */
  readonly onLoop: boolean;
  lstat(path: string): Promise<Stats>;
  stat(path: string): Promise<Stats>;
  link(existing: string, name: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Creates `path`, which must not exist (EEXIST otherwise), holding `body`. */
  writeNew(path: string, body: string, mode: number): Promise<void>;
}

/** Each folder under enroll.dir the agent takes files from or puts them in. */
function workedFolders(layout: Layout): string[] {
  return [layout.root, dirname(layout.done(KINDS[0])), dirname(layout.failed(KINDS[0])), ...kindFolders(layout)];
}

/**
 * Whether enroll.dir's folders are all on state_dir's file system (the device of `stateFolder`,
 * a folder there). Folders are looked at through symbolic links: done/ linked to a USB stick is
 * on the stick. A folder that cannot be looked at counts as elsewhere.
 */
export async function onStateFileSystem(layout: Layout, stateFolder: string): Promise<boolean> {
  const state = (await stat(stateFolder)).dev;
  const devs = await Promise.all(workedFolders(layout).map((f) => stat(f).then((s) => s.dev, () => undefined)));
  return devs.every((d) => d === state);
}

/** Calls through the thread pool until decide() finds one file system. */
export function createEnrollFs(): EnrollFs & { decide(layout: Layout, stateFolder: string): Promise<boolean> } {
  let onLoop = false;
  return {
    get onLoop() {
      return onLoop;
    },
    /**
     * Decides where calls are made from now on (at each start of the enrollment folders). A
     * state_dir folder that cannot be looked at leaves them on the pool: never a reason not to start.
     */
    async decide(layout, stateFolder) {
      onLoop = false;
      onLoop = await onStateFileSystem(layout, stateFolder).catch(() => false);
      return onLoop;
    },
    // async functions: an error thrown in place reaches the caller as a rejection, as from the pool.
    lstat: async (path) => (onLoop ? lstatSync(path) : lstat(path)),
    stat: async (path) => (onLoop ? statSync(path) : stat(path)),
    link: async (existing, name) => (onLoop ? linkSync(existing, name) : link(existing, name)),
    rename: async (from, to) => (onLoop ? renameSync(from, to) : rename(from, to)),
    writeNew: async (path, body, mode) => (onLoop ? writeFileSync(path, body, { flag: 'wx', mode }) : writeNewFile(path, body, { flag: 'wx', mode })),
  };
}
