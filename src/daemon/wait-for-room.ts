import { statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AbortedError, AgentError, describeError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { wait } from '../util/backoff.js';
import type { Notifier } from './sd-notify.js';

// What the daemon needs of state_dir before it can start (the folder, the instance lock, agent.db)
// cannot be made on a file system full to its last block or inode. Exiting would have systemd
// start the agent again every 5 s, a start and a journal entry each time, for as long as the disk
// stays full. So the daemon waits for the space, says so in its log and its systemd status, and
// asks systemd for more start time at each try (EXTEND_TIMEOUT_USEC, over TimeoutStartSec=60s).

/** First wait between tries; it doubles up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 30_000;

export interface WaitForRoomOptions {
  logger: Logger;
  notifier: Notifier;
  /** The stop request (SIGTERM): ends the waiting. */
  signal?: AbortSignal | undefined;
}

function codeOf(e: unknown): unknown {
  return e instanceof AgentError ? (e.details as { code?: unknown } | undefined)?.code : (e as { code?: unknown } | undefined)?.code;
}

/** Whether the file system holding `path` (or its nearest existing folder) has no free block or inode left for us. */
function noRoomAt(path: string): boolean {
  for (let p = resolve(path); ; p = dirname(p)) {
    try {
      const s = statfsSync(p);
      return s.bavail === 0 || s.ffree === 0;
    } catch {
      if (dirname(p) === p) return false;
    }
  }
}

/**
 * Whether a file could not be made at `path` for want of room: the kernel's ENOSPC or EDQUOT, or
 * SQLITE_CANTOPEN (SQLite says only "unable to open database file") where `path`'s file system
 * has no block or inode left.
 */
export function isOutOfRoom(err: unknown, path: string): boolean {
  const code = codeOf(err);
  return code === 'ENOSPC' || code === 'EDQUOT' || (code === 'SQLITE_CANTOPEN' && noRoomAt(path));
}

/**
 * Whether `err` is a failure for want of space or of working storage, which may come back:
 * isOutOfRoom, or SQLite's SQLITE_FULL or SQLITE_IOERR_*.
 */
export function mayComeBack(err: unknown, path: string): boolean {
  const code = codeOf(err);
  return isOutOfRoom(err, path) || code === 'SQLITE_FULL' || (typeof code === 'string' && code.startsWith('SQLITE_IOERR'));
}

/**
 * `open()`, tried again while it fails for want of space (mayComeBack for `path`); any other
 * error throws at once. `what` names what it waits for in the log and the systemd status.
 */
export async function retryForRoom<T>(what: string, path: string, open: () => T, o: WaitForRoomOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const done = open();
      if (attempt > 0) o.logger.info({ path, tries: attempt + 1 }, `${what} opened; starting`);
      return done;
    } catch (err) {
      if (!mayComeBack(err, path)) throw err;
      const delay = Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** attempt);
      const why = describeError(err);
      o.logger.error({ path, retryInMs: delay }, `${why}; waiting for it, trying again in ${Math.round(delay / 1000)} s`);
      await o.notifier.notify({ STATUS: `waiting for ${what}: ${why}`, EXTEND_TIMEOUT_USEC: (delay + 60_000) * 1000 });
      if (!(await wait(delay, o.signal))) throw new AbortedError(`stopped while waiting for ${what} to open`);
    }
  }
}
