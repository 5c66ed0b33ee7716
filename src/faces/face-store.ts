import { inTransaction, inUnsyncedTransaction, type Db } from '../db/database.js';
import { createDurableCommit, type WalSyncer } from '../db/wal-sync.js';
import type { CachedFace, SyncReport } from './types.js';
import type { RecheckCacheStats } from './recheck-pacer.js';

// The face rows in agent.db (FACES_V1). A row with image_file NULL is a face whose image has never
// been fetched successfully: it is kept (with its error) so that status can show it and the next
// sync retries it, but it is never served (listCached, index.json).

export interface FaceRow {
  face_id: string;
  group_id: string;
  id: number | null;
  name: string;
  image_file: string | null;
  image_sha256: string | null;
  image_etag: string | null;
  image_last_modified: string | null;
  image_bytes: number | null;
  image_checked_at: number | null;
  /** ms epoch the image is due for a re-check at the latest (schema 2; NULL: only the round's order, recheck.ts). */
  image_recheck_at: number | null;
  error: string | null;
  error_code: string | null;
  updated_at: number;
}

export interface SyncRunRow {
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  ok: number;
  added: number;
  updated: number;
  removed: number;
  failed: number;
  image_requests: number;
  error: string | null;
  error_code: string | null;
}

/** The face changes of one sync, committed together. */
export interface FaceChanges {
  /** Kept as they are (not copied) as the store's rows once committed: not to be changed afterwards. */
  upserts: FaceRow[];
  deletes: string[];
  /** More writes that belong to the same transaction (clearing the kept downloads). */
  also?: () => void;
}

const ROW_COLUMNS = 'face_id, group_id, id, name, image_file, image_sha256, image_etag, image_last_modified, image_bytes, image_checked_at, image_recheck_at, error, error_code, updated_at';
const KEEP_RUNS = 200;
/** A CachedFace's columns (all of schema 1: `faces list --cached` reads them read-only, unmigrated). */
const CACHED_COLUMNS = 'face_id, group_id, id, name, image_file, image_sha256, image_bytes, updated_at';
/** The served faces in CachedFace's columns, as index.json orders them; rows for cachedFaceOf (raw). */
export const CACHED_FACES_SQL = `SELECT ${CACHED_COLUMNS} FROM faces WHERE image_file IS NOT NULL ORDER BY id, face_id`;
/** Rows read per step of loadRows: between two steps the event loop runs other work. */
const LOAD_BATCH = 500;

/** A row's columns in ROW_COLUMNS' order, as the upsert binds them. */
type UpsertParams = [string, string, number | null, string, string | null, string | null, string | null, string | null, number | null, number | null, number | null, string | null, string | null, number];

/** A row as a `.raw()` statement gives it: its columns in ROW_COLUMNS' order, after the rowid in loadRows'. */
type RawRow = unknown[];

/**
 * The row object from its columns: better-sqlite3 builds each row object property by property,
 * while rows read as arrays and made here as one object literal cost less and all share one shape.
 */
function rowOf(r: RawRow, at: number): FaceRow {
  return {
    face_id: r[at] as string, group_id: r[at + 1] as string, id: r[at + 2] as number | null, name: r[at + 3] as string,
    image_file: r[at + 4] as string | null, image_sha256: r[at + 5] as string | null, image_etag: r[at + 6] as string | null,
    image_last_modified: r[at + 7] as string | null, image_bytes: r[at + 8] as number | null,
    image_checked_at: r[at + 9] as number | null, image_recheck_at: r[at + 10] as number | null,
    error: r[at + 11] as string | null, error_code: r[at + 12] as string | null, updated_at: r[at + 13] as number,
  };
}

export function createFaceStore(db: Db, syncer: WalSyncer) {
  const durableCommit = createDurableCommit(db, syncer);
  const all = db.prepare<[], RawRow>(`SELECT ${ROW_COLUMNS} FROM faces`).raw(true);
  const batch = db.prepare<[number, number], RawRow>(`SELECT rowid, ${ROW_COLUMNS} FROM faces WHERE rowid > ? ORDER BY rowid LIMIT ?`).raw(true);
  const served = db.prepare<[], RawRow>(`SELECT ${ROW_COLUMNS} FROM faces WHERE image_file IS NOT NULL ORDER BY id, face_id`).raw(true);
  // What `listCached` shows, read straight into its shape, not through 14-field rows first.
  const cached = db.prepare<[], RawRow>(CACHED_FACES_SQL).raw(true);
  const cachedOne = db.prepare<[string], RawRow>(`SELECT ${CACHED_COLUMNS} FROM faces WHERE face_id = ? AND image_file IS NOT NULL`).raw(true);
  const countServed = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM faces WHERE image_file IS NOT NULL');
  // Positional parameters: better-sqlite3 binds named ones by looking each up on the object, and
  // the first sync's commit waits on 10,000 upserts.
  const upsert = db.prepare<UpsertParams>(`INSERT INTO faces (${ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT(face_id) DO UPDATE SET group_id = excluded.group_id, id = excluded.id, name = excluded.name,
      image_file = excluded.image_file, image_sha256 = excluded.image_sha256, image_etag = excluded.image_etag,
      image_last_modified = excluded.image_last_modified, image_bytes = excluded.image_bytes,
      image_checked_at = excluded.image_checked_at, image_recheck_at = excluded.image_recheck_at, error = excluded.error, error_code = excluded.error_code,
      updated_at = excluded.updated_at`);
  const remove = db.prepare<[string]>('DELETE FROM faces WHERE face_id = ?');
  const forgetImage = db.prepare<[string]>('UPDATE faces SET image_file = NULL, image_sha256 = NULL, image_etag = NULL, image_last_modified = NULL WHERE face_id = ?');
  const insertRun = db.prepare(`INSERT INTO sync_runs (started_at, finished_at, duration_ms, ok, added, updated, removed, failed, image_requests, error, error_code)
    VALUES (@started_at, @finished_at, @duration_ms, @ok, @added, @updated, @removed, @failed, @image_requests, @error, @error_code)`);
  const pruneRuns = db.prepare<[number]>('DELETE FROM sync_runs WHERE id <= (SELECT max(id) FROM sync_runs) - ?');
  const lastRun = db.prepare<[], SyncRunRow>('SELECT started_at, finished_at, duration_ms, ok, added, updated, removed, failed, image_requests, error, error_code FROM sync_runs ORDER BY id DESC LIMIT 1');
  const lastOk = db.prepare<[], { finished_at: number }>('SELECT finished_at FROM sync_runs WHERE ok = 1 ORDER BY id DESC LIMIT 1');
  const named = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM faces WHERE image_file = ?');
  // No index on image_file (it would cost every commit a write): one scan for a whole list.
  const namedIn = db.prepare<[string], [string]>('SELECT image_file FROM faces WHERE image_file IN (SELECT value FROM json_each(?))').raw(true);
  const recheckStats = db.prepare<[], RecheckCacheStats>(`SELECT count(*) AS served, coalesce(sum(image_etag IS NOT NULL OR image_last_modified IS NOT NULL), 0) AS withValidators,
    coalesce(avg(image_bytes), 0) AS meanBytes, min(coalesce(image_checked_at, 0)) AS oldestCheckAt FROM faces WHERE image_file IS NOT NULL`);
  const failedRows = db.prepare<[number], RawRow>(`SELECT ${ROW_COLUMNS} FROM faces WHERE error IS NOT NULL ORDER BY name LIMIT ?`).raw(true);

  function recordRun(run: SyncReport): void {
    insertRun.run({
      started_at: Date.parse(run.started_at),
      finished_at: Date.parse(run.finished_at),
      duration_ms: run.duration_ms,
      ok: run.ok ? 1 : 0,
      added: run.added,
      updated: run.updated,
      removed: run.removed,
      failed: run.failed,
      image_requests: run.image_requests,
      error: run.error?.message ?? null,
      error_code: run.error?.code ?? null,
    });
    pruneRuns.run(KEEP_RUNS);
  }

  // The rows as of the last commit, kept in memory while the cache is busy: a pass compares the
  // listing with this map, and an enrollment burst's passes render only their new lines of
  // index.json (cache-files.ts keeps each row object's line). This store is the only writer of
  // the table. They are dropped after every sync but enrollment's refreshes (release): they would
  // be most of an idle daemon's memory with a large group cached.
  let mirror: Map<string, FaceRow> | undefined;
  /** Bumped by every write: a loadRows that saw one meanwhile does not keep what it read. */
  let writes = 0;
  /** A new object at every write: what a reader of cachedFaces() compares to know it has changed. */
  let version: object = {};
  /** The last failedRows answer and the writes it saw: status asks at every watchdog tick, and the
   * query scans the whole table (no index on error). */
  let failed: { writes: number; limit: number; rows: FaceRow[] } | undefined;
  /** The last recheckStats answer and the writes it saw (status asks it, as failedRows). */
  let stats: { writes: number; value: RecheckCacheStats } | undefined;
  const rowMap = (): Map<string, FaceRow> => (mirror ??= new Map(all.all().map((r) => [r[0] as string, rowOf(r, 0)])));

  return {
    /**
     * Reads the rows into memory if they are not there, LOAD_BATCH at a time with the event loop
     * free between steps: a large group read at once would hold it at every sync.
     */
    async loadRows(): Promise<void> {
      if (mirror) return;
      const seen = writes;
      const loaded = new Map<string, FaceRow>();
      for (let after = 0; ;) {
        const rows = batch.all(after, LOAD_BATCH);
        for (const r of rows) loaded.set(r[1] as string, rowOf(r, 1));
        if (rows.length < LOAD_BATCH) break;
        after = rows.at(-1)![0] as number;
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (mirror) return;
      }
      if (writes === seen) mirror = loaded;
    },
    /**
     * Drops the in-memory rows (the next pass reads them again), and SQLite's page cache of this
     * connection (`PRAGMA shrink_memory`: the pages are read back from the kernel's cache when next needed).
     */
    release(): void {
      mirror = undefined;
      db.pragma('shrink_memory');
    },
    allRows(): FaceRow[] {
      return [...rowMap().values()];
    },
    rowMap(): ReadonlyMap<string, Readonly<FaceRow>> {
      return rowMap();
    },
    /**
     * The rows index.json and `faces list --cached` show, ordered as `ORDER BY id, face_id`. From
     * the in-memory rows once they are loaded: reading 10,000 rows back right after committing them
     * made the first sync's heap peak. The objects are the store's own: read them, do not change them.
     */
    servedRows(): ReadonlyArray<Readonly<FaceRow>> {
      return mirror ? servedOf(mirror.values()) : served.all().map((r) => rowOf(r, 0));
    },
    /** Changes (identity) whenever the rows, and so cachedFaces(), may have: the console keeps its
     * face list's answer until then. */
    version(): object {
      return version;
    },
    /** The served faces as the console, the control socket and `faces list --cached` show them. */
    cachedFaces(): CachedFace[] {
      return mirror ? servedOf(mirror.values()).map(toCachedFace) : cached.all().map(cachedFaceOf);
    },
    /** One served face by its face_id (the console's thumbnail and image): a lookup, not the list. */
    cachedFace(faceId: string): CachedFace | undefined {
      const r = cachedOne.get(faceId);
      return r ? cachedFaceOf(r) : undefined;
    },
    /** What servedRows() will give once `changes` are committed: the index is written meanwhile (sync-run.ts). */
    servedRowsAfter(changes: FaceChanges): ReadonlyArray<Readonly<FaceRow>> {
      const after = new Map(rowMap());
      for (const row of changes.upserts) after.set(row.face_id, row);
      for (const id of changes.deletes) after.delete(id);
      return servedOf(after.values());
    },
    countServed(): number {
      // From the rows in memory when they are there: the statement scans the table, after every
      // refresh of an enrollment burst.
      if (!mirror) return countServed.get()?.n ?? 0;
      let n = 0;
      for (const r of mirror.values()) if (r.image_file !== null) n++;
      return n;
    },
    failedRows(limit: number): readonly FaceRow[] {
      if (failed?.writes !== writes || failed.limit !== limit) failed = { writes, limit, rows: failedRows.all(limit).map((r) => rowOf(r, 0)) };
      return failed.rows;
    },
    /** What re-check pacing and status need of the served faces: count, validators, mean size, oldest check. */
    recheckStats(): RecheckCacheStats {
      if (stats?.writes !== writes) stats = { writes, value: recheckStats.get()! };
      return stats.value;
    },
    isNamed(file: string): boolean {
      return named.get(file) !== undefined;
    },
    /** Which of `files` a row names: one look at the table (each isNamed scans it, 10,000 rows). */
    namedAmong(files: readonly string[]): Set<string> {
      if (files.length === 0) return new Set();
      if (mirror) {
        const wanted = new Set(files);
        const found = new Set<string>();
        for (const r of mirror.values()) if (r.image_file !== null && wanted.has(r.image_file)) found.add(r.image_file);
        return found;
      }
      return new Set(namedIn.all(JSON.stringify(files)).map((r) => r[0]));
    },
    lastRun(): SyncRunRow | undefined {
      return lastRun.get();
    },
    lastSuccessAt(): number | undefined {
      return lastOk.get()?.finished_at;
    },
    /**
     * Rows and deletions in one transaction: readers see all of a sync or none of it. Committed
     * when this returns its promise (the rows in memory too), which resolves once they are on disk:
     * index.json names them only then (seed-pass.ts, sync-run.ts). The fsync runs on the pool, not
     * the event loop (db/wal-sync.ts): an enrollment burst's seed passes made 15 of them a burst.
     */
    async commit(changes: FaceChanges): Promise<void> {
      if (changes.upserts.length === 0 && changes.deletes.length === 0 && !changes.also) return;
      writes++;
      version = {};
      let synced: Promise<void>;
      try {
        synced = durableCommit(() => {
          for (const r of changes.upserts) {
            upsert.run(r.face_id, r.group_id, r.id, r.name, r.image_file, r.image_sha256, r.image_etag, r.image_last_modified, r.image_bytes, r.image_checked_at, r.image_recheck_at, r.error, r.error_code, r.updated_at);
          }
          for (const id of changes.deletes) remove.run(id);
          changes.also?.();
        }).synced;
      } catch (err) {
        mirror = undefined; // the table is the truth: re-read it next time
        throw err;
      }
      if (mirror) {
        // The rows are the caller's to give away (sync-run.ts builds them for this commit only).
        for (const row of changes.upserts) mirror.set(row.face_id, row);
        for (const id of changes.deletes) mirror.delete(id);
      }
      await synced;
    },
    /**
     * Every sync, failed or not, is remembered for status across restarts. Not synced to disk on
     * its own: a power cut may take back the latest rows of this history (the next durable commit
     * of agent.db covers them), and an fsync on the event loop per sync, a seed pass of an
     * enrollment burst included, is not worth that.
     */
    recordRun(run: SyncReport): void {
      inUnsyncedTransaction(db, () => recordRun(run));
    },
    /** Rows whose image file vanished from disk are fetched again by the next sync. */
    forgetImages(faceIds: string[]): void {
      if (faceIds.length === 0) return;
      writes++;
      version = {};
      try {
        inTransaction(db, () => {
          for (const id of faceIds) forgetImage.run(id);
        });
      } finally {
        mirror = undefined;
      }
    },
  };
}

export type FaceStore = ReturnType<typeof createFaceStore>;

function servedOf(rows: Iterable<FaceRow>): FaceRow[] {
  const out: FaceRow[] = [];
  for (const r of rows) if (r.image_file !== null) out.push(r);
  return out.sort(byIdThenFaceId);
}

/** SQLite's `ORDER BY id, face_id`: NULL ids first, face_id by code unit (32 hex digits, so by byte). */
function byIdThenFaceId(a: FaceRow, b: FaceRow): number {
  if (a.id !== b.id) {
    if (a.id === null) return -1;
    if (b.id === null) return 1;
    return a.id - b.id;
  }
  return a.face_id < b.face_id ? -1 : a.face_id > b.face_id ? 1 : 0;
}

/** A raw row of CACHED_FACES_SQL as the face it shows. */
export function cachedFaceOf(r: RawRow): CachedFace {
  return {
    face_id: r[0] as string, group_id: r[1] as string, id: (r[2] as number | null) ?? 0, name: r[3] as string,
    image: (r[4] as string | null) ?? '', image_sha256: (r[5] as string | null) ?? '', image_bytes: r[6] as number | null,
    updated_at: new Date(r[7] as number).toISOString(),
  };
}

export function toCachedFace(row: Pick<FaceRow, 'face_id' | 'group_id' | 'id' | 'name' | 'image_file' | 'image_sha256' | 'image_bytes' | 'updated_at'>): CachedFace {
  return {
    face_id: row.face_id,
    group_id: row.group_id,
    id: row.id ?? 0,
    name: row.name,
    image: row.image_file ?? '',
    image_sha256: row.image_sha256 ?? '',
    image_bytes: row.image_bytes,
    updated_at: new Date(row.updated_at).toISOString(),
  };
}
