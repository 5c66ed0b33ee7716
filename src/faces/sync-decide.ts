import type { AgentError } from '../errors.js';
import type { FaceRecord } from '../client/types.js';
import { imageFileName } from './cache-files.js';
import type { FaceRow } from './face-store.js';
import type { ImageOutcome } from './image-download.js';
import { firstRecheckAt } from './recheck.js';
import type { FaceFailure } from './types.js';
import type { SyncPassContext } from './sync-run.js';

// The third phase of a sync pass (sync-run.ts), before anything is written: from the group's
// listing, the cached rows and what each image job came to, the rows to write and delete, the
// downloads to rename into the cache, the image files the new index no longer names, and the
// counts the pass reports. Nothing here touches the disk, so a pass that fails later has changed
// nothing.

export interface RowDecisions {
  upserts: FaceRow[];
  /** face_ids no longer listed. */
  deletes: string[];
  /** Image files the new index no longer names. */
  obsolete: string[];
  /** [download, cache file name] for every image stored. */
  renames: Array<[string, string]>;
  /** Downloads not yet made durable (the pass syncs them before the commit). */
  unsynced: string[];
  added: number;
  updated: number;
  removed: number;
  /** Faces whose image was bad: left out of the cache, the pass goes on. */
  failures: FaceFailure[];
}

/** What the pass's clock and re-check policy say. */
export type DecideContext = Pick<SyncPassContext, 'nowMs' | 'recheckMs' | 'random'>;

export function decideRows(
  remote: ReadonlyMap<string, FaceRecord>, rows: ReadonlyMap<string, FaceRow>, outcomes: ReadonlyMap<string, ImageOutcome>, ctx: DecideContext,
): RowDecisions {
  const failures: FaceFailure[] = [];
  const upserts: FaceRow[] = [];
  const deletes: string[] = [];
  const obsolete: string[] = [];
  const renames: Array<[string, string]> = [];
  const unsynced: string[] = [];
  let added = 0;
  let updated = 0;
  let removed = 0;
  for (const [id, rec] of remote) {
    const prev = rows.get(id);
    const recordChanged = !prev || prev.group_id !== rec.group_id || prev.id !== rec.id || prev.name !== rec.name;
    const outcome = outcomes.get(id);
    if (!recordChanged && !outcome) continue;
    const row: FaceRow = prev ? { ...prev } : {
      face_id: id, group_id: rec.group_id, id: rec.id, name: rec.name, image_file: null, image_sha256: null,
      image_etag: null, image_last_modified: null, image_bytes: null, image_checked_at: null, image_recheck_at: null, error: null, error_code: null, updated_at: ctx.nowMs,
    };
    row.group_id = rec.group_id;
    row.id = rec.id;
    row.name = rec.name;
    let imageChanged = false;
    if (outcome?.kind === 'stored') {
      const file = imageFileName(id, outcome.ext);
      const checkedAt = outcome.checkedAt ?? ctx.nowMs;
      renames.push([outcome.tmp, file]);
      if (!outcome.synced) unsynced.push(outcome.tmp);
      if (prev?.image_file && prev.image_file !== file) obsolete.push(prev.image_file);
      Object.assign(row, {
        image_file: file, image_sha256: outcome.sha256, image_bytes: outcome.bytes, image_etag: outcome.etag,
        image_last_modified: outcome.lastModified, image_checked_at: checkedAt,
        image_recheck_at: firstRecheckAt(checkedAt, ctx.recheckMs, ctx.random), error: null, error_code: null,
      });
      imageChanged = true;
    } else if (outcome?.kind === 'unchanged') {
      // One interval after this check: keeps the spread the first due times were given.
      const checkedAt = outcome.checkedAt ?? ctx.nowMs;
      Object.assign(row, {
        image_etag: outcome.etag, image_last_modified: outcome.lastModified, image_checked_at: checkedAt,
        image_recheck_at: checkedAt + ctx.recheckMs, error: null, error_code: null,
      });
    } else if (outcome?.kind === 'bad') {
      Object.assign(row, { error: outcome.error.message, error_code: outcome.error.code, image_checked_at: ctx.nowMs, image_recheck_at: ctx.nowMs + ctx.recheckMs });
      failures.push(failureOf(rec, outcome.error));
    }
    const servedBefore = !!prev?.image_file;
    if (!servedBefore && row.image_file) added++;
    else if (servedBefore && (recordChanged || imageChanged)) updated++;
    if (recordChanged || imageChanged) row.updated_at = ctx.nowMs;
    upserts.push(row);
  }
  for (const prev of rows.values()) {
    if (remote.has(prev.face_id)) continue;
    deletes.push(prev.face_id);
    if (prev.image_file) {
      obsolete.push(prev.image_file);
      removed++;
    }
  }
  return { upserts, deletes, obsolete, renames, unsynced, added, updated, removed, failures };
}

function failureOf(rec: FaceRecord, err: AgentError): FaceFailure {
  return { face_id: rec.face_id, name: rec.name, code: err.code, message: err.message };
}
