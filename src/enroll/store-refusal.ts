import { isSqliteError } from '../db/database.js';
import { backoffDelay, wait, type BackoffPolicy } from '../util/backoff.js';

// agent.db can refuse a change: SQLITE_FULL when another program filled the file system of
// state_dir, SQLITE_IOERR, SQLITE_BUSY past its timeout. better-sqlite3 rolls the transaction
// back, so the same change can be made again later. A step the service has already answered must
// then be recorded, not repeated (an upload sent twice) nor called failed for a fault of the
// terminal; a step not started yet simply waits (failure.ts classifies the refusal as retryable).

export type StoreRefusal = Error & { code?: string };

/** The error is agent.db's (SQLite's), not the file's nor the service's. */
export const isStoreRefusal: (err: unknown) => err is StoreRefusal = isSqliteError;

/** SQLite's code, and what to do about it where that is clear: for log lines and error files. */
export function describeRefusal(err: StoreRefusal): string {
  const code = err.code ?? err.message;
  if (code === 'SQLITE_FULL') return `${code}: the file system of state_dir is full; free space there`;
  if (code.startsWith('SQLITE_READONLY')) return `${code}: state_dir is read-only; remount it read-write`;
  if (code.startsWith('SQLITE_IOERR')) return `${code}: the storage of state_dir failed a read or write; check it (dmesg)`;
  return code;
}

export interface UntilTakenOptions {
  retry: BackoffPolicy;
  /** Stops the waiting: the change is then left unmade. */
  signal: AbortSignal | undefined;
  /** After each refusal, before the wait of `delayMs`. */
  onRefused(err: StoreRefusal, delayMs: number): void;
}

/**
 * Runs `write` until agent.db takes it, waiting with backoff after each refusal. Resolves false
 * when `signal` aborts first: nothing was written, and the next start settles the row as after a
 * crash. Any other error is thrown as it is.
 */
export async function writeUntilTaken(write: () => Promise<void>, opts: UntilTakenOptions): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      await write();
      return true;
    } catch (err) {
      if (!isStoreRefusal(err)) throw err;
      const delay = backoffDelay(opts.retry, attempt);
      opts.onRefused(err, delay);
      if (!(await wait(delay, opts.signal))) return false;
    }
  }
}
