import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openAgentDbReadOnly } from '../db/read-only.js';
import { AgentError } from '../errors.js';
import { CACHED_FACES_SQL, cachedFaceOf } from './face-store.js';
import type { CachedFace } from './types.js';

// `faces list --cached`: what the terminal would use right now, with no network and without
// disturbing a running daemon (read-only connection; WAL lets it read beside the daemon's writes).

export function agentDbPath(stateDir: string): string {
  return join(stateDir, 'agent.db');
}

export interface CachedFaceView extends CachedFace {
  /** Absolute path of the image file. */
  image_path: string;
}

export function readCachedFaces(stateDir: string): CachedFaceView[] {
  const path = agentDbPath(stateDir);
  if (!existsSync(path)) {
    throw new AgentError(`no face cache at ${path}: the agent has not synced yet; start it (systemctl start terminal-agent) or run 'terminal-agent faces sync'`, { details: { path } });
  }
  const db = openAgentDbReadOnly(stateDir);
  try {
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'faces'").get();
    if (!hasTable) return [];
    // Only columns of schema 1: this connection is read-only and does not migrate, so the CLI of a
    // newer agent can read the cache of a daemon that has not restarted yet.
    return db.prepare<[], unknown[]>(CACHED_FACES_SQL).raw(true).all().map((r) => {
      const face = cachedFaceOf(r);
      return { ...face, image_path: join(stateDir, 'faces', face.image) };
    });
  } finally {
    db.close();
  }
}
