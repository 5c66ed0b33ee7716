import Database from 'better-sqlite3';
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS, type Migration } from './migrations.js';
import { AgentError, AlreadyRunningError } from '../errors.js';
import { makeDirSync } from '../util/make-dir.js';

export type Db = Database.Database;

export interface OpenDbOptions {
  /** Path of agent.db, or ':memory:'. */
  path: string;
  readonly?: boolean;
  migrations?: readonly Migration[];
}

/**
 * Opens agent.db with the settings every component relies on: WAL so that readers (CLI, the
 * face-recognition program) never block the daemon, synchronous=FULL because the outbox records an
 * operator's files and must survive power loss, and a busy timeout for the CLI running beside the
 * daemon. Applies pending migrations in one transaction each.
 */
export function openDatabase(options: OpenDbOptions): Db {
  let db: Db;
  try {
    if (options.path !== ':memory:' && !options.readonly) makeDirSync(dirname(options.path));
    db = new Database(options.path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw new AgentError(`cannot open the database ${options.path}: ${(err as Error).message}; check that state_dir exists and is writable by the agent's user`, { cause: err, details: { path: options.path } });
  }
  try {
    db.pragma('busy_timeout = 5000');
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      migrate(db, options.migrations ?? MIGRATIONS);
    }
  } catch (err) {
    db.close();
    throw unusable(options.path, err);
  }
  return db;
}

/** An error SQLite raised (better-sqlite3's SqliteError, with SQLite's code), not one of ours. */
export function isSqliteError(err: unknown): err is Error & { code?: string } {
  return err instanceof Error && err.name === 'SqliteError';
}

/** SQLite's refusal of the file at open, as what, where and how to fix it (not a stack trace). */
function unusable(path: string, err: unknown): unknown {
  if (!isSqliteError(err)) return err;
  const code = err.code ?? '';
  let fix = "check that state_dir is writable by the agent's user";
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) {
    let free = '';
    try {
      const s = statfsSync(dirname(path));
      free = ` (${Number(s.bavail) * Number(s.bsize)} bytes free there now)`;
    } catch {
      // the reading only adds to the message
    }
    fix = `the file system of state_dir may be full${free}, or its storage failing (dmesg): free space there`;
  } else if (code === 'SQLITE_BUSY') {
    fix = 'another program held its write lock for more than 5 s (a tool writing to it?): stop that program';
  } else if (code.startsWith('SQLITE_READONLY')) {
    fix = 'state_dir is read-only: remount it read-write';
  } else if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    fix = "it is damaged, or not terminal-agent's: move it aside (with its -wal and -shm files) and start again; files still in the enrollment folders are then taken again";
  }
  return new AgentError(`cannot use the database ${path}: ${err.message} (${code}); ${fix}`, { cause: err, details: { path, code } });
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = schemaVersion(db);
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new AgentError(`agent.db has schema version ${current}, newer than this agent knows (${latest}); it was written by a newer terminal-agent: upgrade the agent, or move the database aside`);
  }
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

/** Runs `fn` in an IMMEDIATE transaction (takes the write lock at once, no upgrade deadlocks). */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}

/**
 * Like inTransaction, for records whose loss in a power cut costs only work done again (the face
 * sync's kept-download records, staging.ts): committed without waiting for the disk. In WAL mode
 * synchronous=NORMAL never corrupts the database (the WAL is synced before each checkpoint); a
 * power cut may roll back such commits, and the next FULL commit makes them durable with its own.
 * The connection is back to FULL before anything else runs on it (better-sqlite3 is synchronous).
 */
export function inUnsyncedTransaction<T>(db: Db, fn: () => T): T {
  db.pragma('synchronous = NORMAL');
  try {
    return inTransaction(db, fn);
  } finally {
    db.pragma('synchronous = FULL');
  }
}

export { AlreadyRunningError };
