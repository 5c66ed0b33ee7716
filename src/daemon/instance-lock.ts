import Database from 'better-sqlite3';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AgentError, AlreadyRunningError } from '../errors.js';
import { makeDirSync } from '../util/make-dir.js';
import { isOutOfRoom } from './wait-for-room.js';

// One daemon per state_dir. The lock is an exclusive SQLite lock on state_dir/agent.lock: SQLite
// takes a POSIX byte-range lock that the kernel drops when the process dies, so a crash leaves no
// stale lock and a recycled pid cannot fool it (a pid file alone can do neither), and SQLite's own
// per-inode bookkeeping makes it hold between two opens in one process too (tests, demo).
// agent.pid next to it only serves the error message.

export interface InstanceLock {
  readonly path: string;
  release(): void;
}

export function acquireInstanceLock(stateDir: string, pid: number): InstanceLock {
  const path = join(stateDir, 'agent.lock');
  const pidPath = join(stateDir, 'agent.pid');
  let db: Database.Database;
  try {
    makeDirSync(stateDir);
    db = new Database(path);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const fix = code === 'EDQUOT' ? "the agent's user has used up its disk quota on state_dir's file system: free space there or raise the quota"
      : isOutOfRoom(err, path) ? 'the file system of state_dir is full (no free block or inode): free space there'
        : "check that state_dir exists and is writable by the agent's user";
    const shown = typeof code === 'string' && code.startsWith('SQLITE_') ? ` (${code})` : '';
    throw new AgentError(`cannot create the instance lock ${path}: ${(err as Error).message}${shown}; ${fix}`, { cause: err, details: { path, ...(typeof code === 'string' ? { code } : {}) } });
  }
  try {
    db.pragma('busy_timeout = 0');
    // No journal file: taking the lock then writes nothing, so it is taken on a full disk too
    // (a rollback journal's header is written at BEGIN EXCLUSIVE and failed with SQLITE_FULL).
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    const code = (err as { code?: unknown }).code;
    if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') {
      // Not another daemon: say what is wrong with the file instead.
      const fix = code === 'SQLITE_NOTADB' ? 'no terminal-agent made this file (it holds no data): remove it'
        : "check that state_dir is writable by the agent's user and its file system is not read-only";
      throw new AgentError(`cannot take the instance lock ${path}: ${(err as Error).message}${typeof code === 'string' ? ` (${code})` : ''}; ${fix}`, { cause: err, details: { path } });
    }
    const holder = readPid(pidPath);
    throw new AlreadyRunningError(
      `another terminal-agent${holder ? ` (pid ${holder})` : ''} is already running on state_dir ${stateDir}; stop it first (systemctl stop terminal-agent), or give this one another state_dir`,
      { cause: err, details: { state_dir: stateDir, ...(holder ? { pid: holder } : {}) } },
    );
  }
  try {
    writeFileSync(pidPath, `${pid}\n`);
  } catch {
    // informational only
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      try {
        rmSync(pidPath, { force: true });
      } catch {
        // informational only
      }
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

function readPid(pidPath: string): number | undefined {
  try {
    const n = Number(readFileSync(pidPath, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}
