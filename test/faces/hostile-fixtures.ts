import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/log/logger.js';
import { createFaceSync } from '../../src/faces/face-sync.js';
import { tmpDir } from '../helpers/tmp.js';
import { clientFor, type HostileService, type Route } from '../helpers/hostile-service.js';

// A face sync against a hand-written service (test/helpers/hostile-service.ts): its records are
// made by rec(n), its images served by imageRoutes (one route per face, a good image otherwise).

export const ID = (n: number) => n.toString(16).padStart(32, '0');
export const rec = (n: number, name = `face-${n}`) => ({ face_id: ID(n), group_id: 'g', id: n, name });

export function imageRoutes(images: Map<string, Route>, fallback: Buffer): (path: string) => Route | undefined {
  return (path) => {
    const m = /^\/v1\/api\/faces\/([0-9a-f]{32})\/image$/.exec(path);
    if (!m) return undefined;
    return images.get(m[1]!) ?? ((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': fallback.length }).end(fallback);
    });
  };
}

export async function syncAgainst(svc: HostileService, opts: { request_timeout?: number; retries?: number; concurrency?: number } = {}) {
  const stateDir = tmpDir('ta-hostile-');
  const { client, config } = clientFor(svc, opts, stateDir);
  if (opts.concurrency) config.faces.download_concurrency = opts.concurrency;
  const db = openDatabase({ path: join(stateDir, 'agent.db') });
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
  const registry = new Registry();
  const sync = createFaceSync({ config, db, client, logger: createLogger({ level: 'debug', destination: sink }), metrics: registry, deleteGraceMs: 0, backoff: { initialMs: 20, maxMs: 50 } });
  return {
    sync, registry, lines, facesDir: join(stateDir, 'faces'),
    async close() {
      await sync.stop();
      db.close();
    },
  };
}
