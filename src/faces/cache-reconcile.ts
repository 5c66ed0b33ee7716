import { makeDir } from '../util/make-dir.js';
import type { SyncPassContext } from './sync-run.js';

export type ReconcileContext = Pick<SyncPassContext, 'store' | 'files' | 'staging' | 'logger'>;

/**
 * Start-up repair of the face cache after whatever stopped the last daemon (a crash, `kill -9`, a
 * power cut): rows whose image file vanished are re-fetched by the next sync, index.json is made to
 * match the rows, a sync's published downloads go back to staging, and leftover files go.
 * Returns the version of the index now on disk.
 */
export async function reconcileCache(ctx: ReconcileContext): Promise<string> {
  const { store, files, staging, logger: log } = ctx;
  await makeDir(files.dir);
  await store.loadRows();
  const missing = await files.missingImages(store.allRows());
  if (missing.length > 0) {
    log.warn({ faces: missing.length }, 'cached face images are missing on disk; they will be downloaded again');
    store.forgetImages(missing);
  }
  const ensured = await files.ensureIndex(store.servedRows());
  if (ensured.rewritten) log.info({ index: files.indexPath }, 'face index rewritten from agent.db');
  // A crash during a sync left its published downloads in faces/: back to the staging folder first.
  await staging.unpublish((f) => store.isNamed(f));
  const strays = await files.removeStrays(store.allRows());
  if (strays > 0) log.info({ files: strays }, 'removed leftover files from an interrupted face sync');
  // Downloads kept by a sync that failed before the restart: drop the stale and the unrecorded
  // ones now (those the listing no longer names go at the next sync, which also checks hashes).
  const kept = (await staging.load(undefined, (f) => store.isNamed(f))).size;
  if (kept > 0) log.info({ images: kept }, 'kept face image downloads from an unfinished sync will be used by the next sync');
  return ensured.version;
}
