import { describe, expect, it } from 'vitest';
import { BadResponseError } from '../../src/errors.js';
import type { FaceRecord } from '../../src/client/types.js';
import type { FaceRow } from '../../src/faces/face-store.js';
import type { ImageOutcome } from '../../src/faces/image-download.js';
import { decideRows } from '../../src/faces/sync-decide.js';

// The commit phase's decisions, before anything is written: what the cache will say after a pass
// (rows, files, counts in `faces sync` and status), from the listing, the cached rows and what
// each image came to. No disk here: the phase itself touches none.

const A = 'a'.repeat(32);
const B = 'b'.repeat(32);
const C = 'c'.repeat(32);
const DAY = 86_400_000;
const ctx = { nowMs: 1_000_000, recheckMs: DAY, random: () => 0.5 };

const rec = (face_id: string, name: string, id = 1): FaceRecord => ({ face_id, group_id: 'g1', id, name }) as FaceRecord;
const cached = (face_id: string, name: string, image_file: string | null = `${face_id}.jpg`): FaceRow => ({
  face_id, group_id: 'g1', id: 1, name, image_file, image_sha256: 'old', image_etag: '"e1"', image_last_modified: null, image_bytes: 10,
  image_checked_at: 500, image_recheck_at: 500 + DAY, error: null, error_code: null, updated_at: 500,
});
const stored = (tmp: string, ext = 'jpg', synced = false): ImageOutcome => ({ kind: 'stored', tmp, ext, sha256: 'new', bytes: 20, etag: '"e2"', lastModified: null, ...(synced ? { synced } : {}) });

describe('decideRows', () => {
  it('adds a new face with its image: renamed from its download, synced before the commit, counted as added', () => {
    const d = decideRows(new Map([[A, rec(A, 'ada')]]), new Map(), new Map([[A, stored('/s/.dl-1')]]), ctx);
    expect(d).toMatchObject({ added: 1, updated: 0, removed: 0, renames: [['/s/.dl-1', `${A}.jpg`]], unsynced: ['/s/.dl-1'], obsolete: [], deletes: [], failures: [] });
    expect(d.upserts).toEqual([expect.objectContaining({ face_id: A, name: 'ada', image_file: `${A}.jpg`, image_sha256: 'new', image_etag: '"e2"', image_checked_at: ctx.nowMs, image_recheck_at: ctx.nowMs + 0.75 * DAY, updated_at: ctx.nowMs })]);
  });

  it('a renamed face is updated without touching its image; an unchanged one is not written at all', () => {
    const d = decideRows(new Map([[A, rec(A, 'ada lovelace')], [B, rec(B, 'ben')]]), new Map([[A, cached(A, 'ada')], [B, cached(B, 'ben')]]), new Map(), ctx);
    expect(d).toMatchObject({ added: 0, updated: 1, renames: [], obsolete: [] });
    expect(d.upserts).toEqual([expect.objectContaining({ face_id: A, name: 'ada lovelace', image_file: `${A}.jpg`, updated_at: ctx.nowMs })]);
  });

  it('a replaced image of another type makes the old file obsolete; a re-check answered "not modified" only moves the next one', () => {
    const d = decideRows(
      new Map([[A, rec(A, 'ada')], [B, rec(B, 'ben')]]),
      new Map([[A, cached(A, 'ada')], [B, cached(B, 'ben')]]),
      new Map<string, ImageOutcome>([[A, stored('/s/.dl-2', 'png', true)], [B, { kind: 'unchanged', etag: '"e1"', lastModified: null }]]),
      ctx,
    );
    expect(d).toMatchObject({ added: 0, updated: 1, obsolete: [`${A}.jpg`], renames: [['/s/.dl-2', `${A}.png`]], unsynced: [] });
    const ben = d.upserts.find((r) => r.face_id === B)!;
    expect(ben).toMatchObject({ image_file: `${B}.jpg`, image_checked_at: ctx.nowMs, image_recheck_at: ctx.nowMs + DAY, updated_at: 500 });
  });

  it('a bad image leaves a new face uncached with its error, and is reported; a face no longer listed is deleted with its file', () => {
    const bad = new BadResponseError('the server sent a bad image for face ccc: not an image');
    const d = decideRows(new Map([[C, rec(C, 'cat', 3)]]), new Map([[B, cached(B, 'ben')]]), new Map<string, ImageOutcome>([[C, { kind: 'bad', error: bad }]]), ctx);
    expect(d).toMatchObject({ added: 0, updated: 0, removed: 1, deletes: [B], obsolete: [`${B}.jpg`] });
    expect(d.failures).toEqual([{ face_id: C, name: 'cat', code: bad.code, message: bad.message }]);
    expect(d.upserts).toEqual([expect.objectContaining({ face_id: C, image_file: null, error: bad.message, error_code: bad.code, image_recheck_at: ctx.nowMs + DAY })]);
  });
});
