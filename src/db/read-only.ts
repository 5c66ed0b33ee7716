import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openDatabase, type Db } from './database.js';
import { AgentError } from '../errors.js';

// The commands that only read agent.db (`voiceprint list`, `speaker list`, `faces list --cached`)
// open it read-only: an operator in the agent's group can read the file (0640, group
// terminal-agent, as the Debian package installs it) but not write it or its folder, and a
// read-only connection neither migrates nor takes a lock from the running daemon. These run once
// per CLI call, never in the daemon, so the checks are synchronous.

/** What `read` returns from agent.db under `stateDir`, opened read-only and closed after. */
export function readAgentDb<T>(stateDir: string, read: (db: Db) => T): T {
  const db = openAgentDbReadOnly(stateDir);
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** agent.db under `stateDir`, opened read-only; an AgentError that says what to do when it cannot be. */
export function openAgentDbReadOnly(stateDir: string): Db {
  const path = join(stateDir, 'agent.db');
  try {
    accessSync(path, constants.R_OK);
  } catch (err) {
    throw unreadable(path, err);
  }
  let db: Db | undefined;
  try {
    db = openDatabase({ path, readonly: true });
    // SQLite reads the -wal and -shm beside the file at the first query, not at the open.
    db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get();
    return db;
  } catch (err) {
    db?.close();
    // No running agent, so no agent.db-shm, and a reader may not create one in a folder it cannot
    // write: with no agent.db-wal either, the file alone is the whole database.
    if ((err as { code?: unknown }).code === 'SQLITE_READONLY_DIRECTORY') {
      const copy = settledCopy(path);
      if (copy) return copy;
    }
    const cause = (err as AgentError).cause ?? err;
    throw new AgentError(`cannot read the database ${path}: ${(cause as Error).message}; ${PERMISSION_HINT} (its agent.db-wal and agent.db-shm too)`, { cause: err, details: { path } });
  }
}

/**
 * agent.db read whole into memory, when no agent.db-wal exists before and after the read and the
 * file did not change meanwhile (an agent starting then); undefined otherwise.
 */
function settledCopy(path: string): Db | undefined {
  const wal = `${path}-wal`;
  const before = statSync(path, { bigint: true });
  if (existsSync(wal)) return undefined;
  const image = readFileSync(path);
  const after = statSync(path, { bigint: true });
  if (existsSync(wal) || after.mtimeNs !== before.mtimeNs || after.size !== before.size) return undefined;
  // The header's WAL mode (bytes 18 and 19 = 2) would have SQLite look for a -wal of the image.
  if (image.length >= 20) image[18] = image[19] = 1;
  return new Database(image, { readonly: true });
}

const PERMISSION_HINT = "run the command as a member of the agent's group (sudo adduser $USER terminal-agent, then log in again) or with sudo; `ls -l` shows who may read it";

function unreadable(path: string, err: unknown): AgentError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') {
    return new AgentError(`no agent.db at ${path} yet: the agent creates it when it first starts (systemctl start terminal-agent); if it runs, check that state_dir in the configuration is the daemon's`, { cause: err, details: { path, reason: 'missing' } });
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new AgentError(`cannot read ${path}: permission denied; ${PERMISSION_HINT}`, { cause: err, details: { path, reason: 'permission' } });
  }
  return new AgentError(`cannot read ${path}: ${(err as Error).message}`, { cause: err, details: { path } });
}
