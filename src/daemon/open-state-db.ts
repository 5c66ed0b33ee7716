import { AbortedError, AgentError, describeError } from '../errors.js';
import { openDatabase, type Db } from '../db/database.js';
import type { Logger } from '../log/logger.js';
import { wait } from '../util/backoff.js';
import type { Notifier } from './sd-notify.js';

// agent.db does not open on a file system full to its last block: SQLite sizes its -shm file and
// writes the WAL at open (SQLITE_IOERR_SHMSIZE, SQLITE_FULL; seen on a full loop-mounted ext4).
// Exiting would have systemd start the agent again every 5 s and give up after 5 starts in 10
// minutes (the unit's StartLimitBurst), leaving the terminal without its agent after the space is
// freed. So the daemon waits for the space, says so in its log and its systemd status, and asks
// systemd for more start time at each try (EXTEND_TIMEOUT_USEC, over TimeoutStartSec=60s).

/** First wait between tries; it doubles up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 30_000;

export interface OpenStateDbOptions {
  path: string;
  logger: Logger;
  notifier: Notifier;
  /** The stop request (SIGTERM): ends the waiting. */
  signal?: AbortSignal | undefined;
}

/** Whether the database failed for want of space or of working storage, which may come back. */
function mayComeBack(err: unknown): boolean {
  const code = err instanceof AgentError ? (err.details as { code?: unknown } | undefined)?.code : undefined;
  return typeof code === 'string' && (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR'));
}

/** openDatabase, tried again while it fails for want of space (see above); other errors throw at once. */
export async function openStateDb(o: OpenStateDbOptions): Promise<Db> {
  for (let attempt = 0; ; attempt++) {
    try {
      const db = openDatabase({ path: o.path });
      if (attempt > 0) o.logger.info({ path: o.path, tries: attempt + 1 }, 'agent.db opened; starting');
      return db;
    } catch (err) {
      if (!mayComeBack(err)) throw err;
      const delay = Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** attempt);
      const why = describeError(err);
      o.logger.error({ path: o.path, retryInMs: delay }, `${why}; waiting for it, trying again in ${Math.round(delay / 1000)} s`);
      await o.notifier.notify({ STATUS: `waiting for agent.db: ${why}`, EXTEND_TIMEOUT_USEC: (delay + 60_000) * 1000 });
      if (!(await wait(delay, o.signal))) throw new AbortedError('stopped while waiting for agent.db to open');
    }
  }
}
