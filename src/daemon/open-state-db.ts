import { join } from 'node:path';
import { openDatabase, type Db } from '../db/database.js';
import { acquireInstanceLock, type InstanceLock } from './instance-lock.js';
import { retryForRoom, type WaitForRoomOptions } from './wait-for-room.js';

// What the daemon opens in state_dir before anything else, each waiting while the file system is
// full (wait-for-room.ts): agent.db does not open on a file system full to its last block (SQLite
// sizes its -shm file and writes the WAL at open: SQLITE_IOERR_SHMSIZE, SQLITE_FULL; seen on a
// full loop-mounted ext4), and a state_dir not made yet cannot be made there (ENOSPC).

/** openDatabase of agent.db, tried again while it fails for want of space. */
export function openStateDb(o: WaitForRoomOptions & { path: string }): Promise<Db> {
  return retryForRoom('agent.db', o.path, () => openDatabase({ path: o.path }), o);
}

/** The instance lock (instance-lock.ts), making state_dir when missing, tried again while there is no room for either. */
export function takeInstanceLock(o: WaitForRoomOptions & { stateDir: string; pid: number }): Promise<InstanceLock> {
  return retryForRoom('state_dir', join(o.stateDir, 'agent.lock'), () => acquireInstanceLock(o.stateDir, o.pid), o);
}
