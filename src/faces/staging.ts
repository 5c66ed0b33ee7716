import { readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { inTransaction, inUnsyncedTransaction, type Db } from '../db/database.js';
import { makeDir } from '../util/make-dir.js';
import { sha256OfFile } from '../util/file-hash.js';
import { downloadTempName } from './cache-files.js';

// Downloads kept across a failed sync. A sync downloads new images into `faces/.staging/` and
// renames them into `faces/` only when the whole pass commits; if the pass fails (network drop,
// 5xx, SIGTERM), the finished downloads stay here, recorded in face_staging, so the next pass
// fetches only what is still missing. Readers never see them: index.json and the rows name only
// files in `faces/` itself, and staged files carry no image extension.
// Bounds: one entry per face (face_id is the key), only for faces still listed, at most maxAgeMs
// old, and all of it is dropped by the next pass that commits. A file is used again only after
// its size (and, unless this process wrote or checked it, its sha256) matches the record.
// A new face's download is published at once (image-fetch.ts): renamed to its final name in
// `faces/` while the others download, so that the commit has no renames left. Such a record's
// file is that name (`<face_id>.<ext>`, no leading dot): no row and no index names it until the
// commit, which also clears the records. A pass that fails, and the start after a crash, move
// them back here (unpublish): outside a running pass `faces/` holds only what index.json names.

export const STAGING_DIR = '.staging';
/** Kept downloads older than this are thrown away. */
export const DEFAULT_STAGING_MAX_AGE_MS = 24 * 3_600_000;
/** Records are written in batches (one transaction each, not synced); a crash loses at most this much. */
const FLUSH_EVERY_MS = 3_000;

export interface StagedImage {
  face_id: string;
  /** File name under the staging folder. */
  file: string;
  ext: string;
  sha256: string;
  bytes: number;
  etag: string | null;
  last_modified: string | null;
  /** ms epoch when the server last gave (or confirmed) these bytes. */
  fetched_at: number;
}

export interface StagingDeps {
  db: Db;
  /** The staging folder (`<state_dir>/faces/.staging`). */
  dir: string;
  logger: Logger;
  now: () => number;
  maxAgeMs?: number;
}

export function createStaging(deps: StagingDeps) {
  const { db, dir, logger } = deps;
  const maxAgeMs = deps.maxAgeMs ?? DEFAULT_STAGING_MAX_AGE_MS;
  const all = db.prepare<[], StagedImage>('SELECT face_id, file, ext, sha256, bytes, etag, last_modified, fetched_at FROM face_staging');
  // Positional, as face-store.ts's upsert: a first sync of 10,000 faces records 10,000 downloads.
  const putRow = db.prepare<[string, string, string, string, number, string | null, string | null, number]>(`INSERT OR REPLACE INTO face_staging (face_id, file, ext, sha256, bytes, etag, last_modified, fetched_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  const put = (s: StagedImage) => putRow.run(s.face_id, s.file, s.ext, s.sha256, s.bytes, s.etag, s.last_modified, s.fetched_at);
  const remove = db.prepare<[string, string]>('DELETE FROM face_staging WHERE face_id = ? AND file = ?');
  const clear = db.prepare('DELETE FROM face_staging');

  let pending: StagedImage[] = [];
  let lastFlush = 0;
  /** Set once a row may exist, so that a sync with nothing staged costs no statement. */
  let rowsMayExist = true;
  /** Files this process wrote or hashed: checking their size is enough. Empty when nothing is staged. */
  const trusted = new Set<string>();

  const cacheDir = dirname(dir);
  const pathOf = (file: string) => join(isPublished(file) ? cacheDir : dir, file);

  function flush(): void {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    lastFlush = performance.now();
    rowsMayExist = true; // even if the write fails: the next load removes the files no row names
    // Losing these in a power cut costs downloads done again, never a torn cache: load() checks
    // each file against its record, and a published file no record names is a stray at start-up.
    inUnsyncedTransaction(db, () => {
      for (const s of batch) put(s);
    });
  }

  /** Drops the records; their files too, unless `keepFiles` (a published file a row now names). */
  async function discard(entries: readonly StagedImage[], keepFiles = false): Promise<void> {
    if (entries.length === 0) return;
    inTransaction(db, () => {
      for (const s of entries) remove.run(s.face_id, s.file);
    });
    for (const s of entries) {
      trusted.delete(s.file);
      if (!keepFiles) await rm(pathOf(s.file), { force: true });
    }
  }

  return {
    dir,
    pathOf,
    /**
     * The kept downloads worth using: drops those older than maxAgeMs, those `keep` refuses
     * (faces no longer listed, faces to re-fetch anyway), rows whose file is gone, and files no
     * row names (a crash between a download and its record). A published file that a row of the
     * cache now names (`nameTaken`: an enrollment seeded it meanwhile) loses its record, not its file.
     */
    async load(keep: (s: StagedImage) => boolean = () => true, nameTaken: (file: string) => boolean = () => false): Promise<Map<string, StagedImage>> {
      const kept = new Map<string, StagedImage>();
      if (!rowsMayExist) return kept;
      flush();
      const rows = all.all();
      const present = new Set(await readdir(dir).catch(() => [] as string[]));
      const published = rows.some((s) => isPublished(s.file)) ? new Set(await readdir(cacheDir).catch(() => [] as string[])) : present;
      const drop: StagedImage[] = [];
      const taken: StagedImage[] = [];
      const oldest = deps.now() - maxAgeMs;
      for (const s of rows) {
        if (isPublished(s.file) && nameTaken(s.file)) taken.push(s);
        else if (s.fetched_at >= oldest && (isPublished(s.file) ? published : present).has(s.file) && keep(s)) kept.set(s.face_id, s);
        else drop.push(s);
      }
      await discard(taken, true);
      await discard(drop);
      const named = new Set(rows.map((s) => s.file));
      let strays = 0;
      for (const name of present) {
        if (named.has(name)) continue;
        await rm(pathOf(name), { force: true, recursive: true });
        strays++;
      }
      if (drop.length + strays > 0) logger.debug({ dropped: drop.length, strays, kept: kept.size }, 'pruned kept face downloads');
      rowsMayExist = kept.size > 0;
      if (!rowsMayExist) await rm(dir, { recursive: true, force: true });
      return kept;
    },
    /** Records a finished, checked download so that a later pass can use it if this one fails. */
    add(entry: StagedImage): void {
      pending.push(entry);
      trusted.add(entry.file);
      if (performance.now() - lastFlush >= FLUSH_EVERY_MS) flush();
    },
    /** Writes the records not written yet (a pass is failing: keep what it downloaded). */
    flush,
    /**
     * Moves the recorded downloads published in `faces/` back into the staging folder (a pass
     * failed, or the agent starts after a crash). One that a row of the cache names meanwhile
     * (`nameTaken`) loses its record, not its file; one whose file is gone is dropped by load().
     * Returns how many were moved.
     */
    async unpublish(nameTaken: (file: string) => boolean): Promise<number> {
      if (!rowsMayExist && pending.length === 0) return 0;
      flush();
      const published = all.all().filter((s) => isPublished(s.file));
      if (published.length === 0) return 0;
      await discard(published.filter((s) => nameTaken(s.file)), true);
      await makeDir(dir);
      const moved: StagedImage[] = [];
      for (const s of published) {
        if (nameTaken(s.file)) continue;
        const file = downloadTempName(s.face_id);
        const ok = await rename(pathOf(s.file), join(dir, file)).then(() => true, (err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') logger.warn({ err: err.message, file: s.file }, 'could not move a kept face download back into the staging folder');
          return false;
        });
        if (!ok) continue;
        if (trusted.delete(s.file)) trusted.add(file);
        moved.push({ ...s, file });
      }
      // A crash before this leaves records naming the old places: load() drops them and the moved
      // files are unrecorded strays there (one download lost, nothing torn).
      inTransaction(db, () => {
        for (const s of moved) put(s);
      });
      return moved.length;
    },
    discard,
    /** Whether the next commit must clear face_staging (run clearRows inside it). */
    dirty(): boolean {
      return rowsMayExist || pending.length > 0;
    },
    /** Inside the transaction that commits a pass: everything staged was used or is stale. */
    clearRows(): void {
      clear.run();
    },
    /** After that commit: forgets the records and deletes the folder with what is left in it. */
    async cleared(): Promise<void> {
      pending = [];
      rowsMayExist = false;
      trusted.clear();
      await rm(dir, { recursive: true, force: true });
    },
    /** True when the file still holds the recorded bytes. */
    async verify(s: StagedImage): Promise<boolean> {
      const st = await stat(pathOf(s.file)).catch(() => undefined);
      if (!st?.isFile() || st.size !== s.bytes) return false;
      if (trusted.has(s.file)) return true;
      const ok = (await sha256OfFile(pathOf(s.file)).catch(() => '')) === s.sha256;
      if (ok) trusted.add(s.file);
      return ok;
    },
  };
}

export type Staging = ReturnType<typeof createStaging>;

/** A published download's file (`<face_id>.<ext>`), not a temp name in the staging folder. */
function isPublished(file: string): boolean {
  return !file.startsWith('.');
}
