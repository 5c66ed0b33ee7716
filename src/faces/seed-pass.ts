import { renameSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { setImmediate } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { FaceRecord } from '../client/types.js';
import type { DiskFloor } from '../disk/disk-floor.js';
import { fsyncDir, tempPathFor } from '../util/fs-atomic.js';
import type { CacheFiles } from './cache-files.js';
import { imageFileName, isValidFaceId } from './cache-files.js';
import { makeDurable } from './durability.js';
import type { FaceRow, FaceStore } from './face-store.js';
import { extensionFor, ImageTap } from './image-check.js';
import type { SyncPassResult } from './sync-run.js';

// Seeding: a face this agent just uploaded is put into the cache from the bytes it sent, instead of
// downloading them back (a GET, a temp file and its sync per face: a third of an enrollment
// burst's CPU). The record comes from the listing that told enrollment the face_id, so a seed pass
// sends no request at all, and one pass (one index.json) serves every seed that arrived meanwhile.
//
// The service may store the image differently from what it received (re-encoded, resized): the
// spec does not say, and the agent depends on as little as it can. So a seeded image is recorded
// with no validators and falls due for a re-check one sync_interval later: the next regular sync
// or the one after asks for it unconditionally (first in the re-checks' round, recheck.ts)
// and replaces the cached bytes if the service's differ. Until then the cache serves the exact
// image the service accepted for that face. The same ordering as a sync pass keeps readers safe:
// images durable and renamed into place, then the rows, then index.json.

export interface FaceSeed {
  /** The face as the group listing showed it (after the upload). */
  face: Pick<FaceRecord, 'face_id' | 'group_id' | 'id' | 'name'>;
  /** The image bytes the service accepted for it. */
  bytes: Buffer;
  /** Their sha256 (hex) when the caller has it already (the claim hashed the same bytes): not hashed again. */
  sha256?: string | undefined;
}

export interface SeedPassContext {
  store: FaceStore;
  files: CacheFiles;
  logger: Logger;
  nowMs: number;
  /** When seeded images fall due for their re-check: about the next regular sync. */
  recheckAt: number;
  maxImageBytes: number;
  signal: AbortSignal;
  disk?: DiskFloor | undefined;
}

interface Checked {
  seed: FaceSeed;
  ext: string;
  sha256: string;
}

/** The seed's bytes as the cache would take them from a download, or why not. */
function check(seed: FaceSeed, maxBytes: number): Checked | string {
  const tap = new ImageTap(maxBytes, (n) => new Error(`${n} bytes, over ${maxBytes}`), !seed.sha256);
  try {
    tap.observe(seed.bytes);
  } catch (err) {
    return (err as Error).message;
  }
  const verdict = tap.verdict();
  if ('problem' in verdict) return verdict.problem;
  return { seed, ext: extensionFor(verdict.type), sha256: seed.sha256 || tap.sha256() };
}

interface Write {
  /** Where the bytes go first: the image's own path (`direct`), else a temp name beside it. */
  path: string;
  file: string;
  bytes: Buffer;
  direct: boolean;
}

/**
 * Writes the images and makes them durable, before any row or index.json names them. One that
 * replaces a cached image goes to a temp name and is renamed over it, so a reader never sees it
 * half written; a new name is written as it is (a rename per face less in a burst), unless a
 * file is there already (a stray of a crash: no row names it), which a temp name replaces.
 */
async function writeImages(ctx: SeedPassContext, writes: Write[]): Promise<void> {
  try {
    // The cache is under state_dir: written and renamed on the event loop, a turn of it each
    // (util/state-fs.ts says why); only the sync that makes them durable goes to the pool.
    for (const w of writes) {
      try {
        writeFileSync(w.path, w.bytes, { flag: 'wx', mode: 0o644 });
      } catch (err) {
        if (!w.direct || (err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        w.direct = false;
        w.path = tempPathFor(w.path);
        writeFileSync(w.path, w.bytes, { flag: 'wx', mode: 0o644 });
      }
      await setImmediate();
    }
    await makeDurable(ctx.files.dir, writes.map((w) => w.path), ctx.signal, ctx.logger);
    for (const w of writes) if (!w.direct) renameSync(w.path, ctx.files.pathOf(w.file));
  } catch (err) {
    // Renamed ones stay (strays no row names are removed at start-up); the rest, written under
    // their own names included, no row names yet: removed now.
    await Promise.all(writes.map((w) => rm(w.path, { force: true })));
    throw err;
  }
}

export async function runSeedPass(ctx: SeedPassContext, seeds: readonly FaceSeed[]): Promise<SyncPassResult> {
  await ctx.store.loadRows();
  const rows = ctx.store.rowMap();
  const upserts: FaceRow[] = [];
  const obsolete: string[] = [];
  const writes: Write[] = [];
  let added = 0;
  let updated = 0;
  for (const seed of new Map(seeds.map((s) => [s.face.face_id, s])).values()) {
    if (!isValidFaceId(seed.face.face_id)) continue;
    const c = check(seed, ctx.maxImageBytes);
    if (typeof c === 'string') {
      // Not what the cache takes from a download either: the next sync fetches the service's copy.
      ctx.logger.warn({ face_id: seed.face.face_id, problem: c }, 'an uploaded face image was not put into the cache; the next sync downloads it');
      continue;
    }
    const prev = rows.get(seed.face.face_id);
    const file = imageFileName(seed.face.face_id, c.ext);
    const sameImage = prev?.image_file === file && prev.image_sha256 === c.sha256;
    const sameRecord = prev && prev.group_id === seed.face.group_id && prev.id === seed.face.id && prev.name === seed.face.name;
    if (sameImage && sameRecord) continue;
    if (!sameImage) {
      // A name no row gives yet (a new face, or its image under another extension) is written in
      // place: nothing reads it until index.json names it, after the rows (see writeImages).
      const direct = prev?.image_file !== file;
      const path = ctx.files.pathOf(file);
      writes.push({ path: direct ? path : tempPathFor(path), file, bytes: seed.bytes, direct });
      if (prev?.image_file && prev.image_file !== file) obsolete.push(prev.image_file);
    }
    if (prev?.image_file) updated++;
    else added++;
    upserts.push({
      face_id: seed.face.face_id, group_id: seed.face.group_id, id: seed.face.id, name: seed.face.name,
      image_file: file, image_sha256: c.sha256, image_bytes: seed.bytes.length,
      // Never confirmed by a download: no validators, and due at the next regular sync (see above).
      image_etag: sameImage ? prev.image_etag : null, image_last_modified: sameImage ? prev.image_last_modified : null,
      image_checked_at: sameImage ? prev.image_checked_at : ctx.nowMs, image_recheck_at: sameImage ? prev.image_recheck_at : ctx.recheckAt,
      error: null, error_code: null, updated_at: ctx.nowMs,
    });
  }
  const empty = { failures: [], imageRequests: 0, reused: 0, rechecks: 0, rechecksDeferred: 0, skipped: [], removed: 0 };
  if (upserts.length === 0) return { ...empty, added: 0, updated: 0, indexWritten: false, indexVersion: null, obsolete: [] };

  const changes = { upserts, deletes: [] };
  if (writes.length > 0) await ctx.disk?.assertRoom(writes.reduce((n, w) => n + w.bytes.length, 0), 'face images');
  // The index the commit will name is written and fsynced while the images are (as a sync pass
  // does, sync-run.ts): after the commit it is only renamed into place. On an SD card every flush
  // waited for in turn is tens of ms, and the seeds of a burst pile up in memory meanwhile.
  const t0 = performance.now();
  let indexMs = 0;
  const preparing = ctx.files.prepareIndex(ctx.store.servedRowsAfter(changes)).finally(() => { indexMs = performance.now() - t0; });
  const [images, prepared] = await Promise.allSettled([
    writes.length > 0 ? writeImages(ctx, writes).then(() => fsyncDir(ctx.files.dir)) : undefined,
    preparing,
  ]);
  try {
    if (images.status === 'rejected') throw images.reason;
    if (prepared.status === 'rejected') throw prepared.reason;
    await ctx.store.commit(changes);
  } catch (err) {
    if (prepared.status === 'fulfilled') await ctx.files.discardIndex(prepared.value);
    throw err;
  }
  const t1 = performance.now();
  const indexVersion = await ctx.files.publishIndex(prepared.value);
  indexMs += performance.now() - t1;
  ctx.logger.debug({ seeded: upserts.length, images: writes.length }, 'face cache seeded from uploaded images');
  return { ...empty, added, updated, indexWritten: true, indexVersion, obsolete, indexMs };
}

/** A seed pass followed by a sync pass in the same run: the counts of both, the index of the last. */
export function combinePasses(first: SyncPassResult, second: SyncPassResult): SyncPassResult {
  return {
    ...second,
    added: first.added + second.added,
    updated: first.updated + second.updated,
    indexWritten: first.indexWritten || second.indexWritten,
    indexVersion: second.indexVersion ?? first.indexVersion,
    obsolete: [...first.obsolete, ...second.obsolete],
  };
}
