import type { FaceRecord, FileUpload, ServiceClient } from '../client/types.js';
import type { Logger } from '../log/logger.js';
import type { Applied } from './failure.js';
import type { Commit } from './commit-batcher.js';
import type { SendGate } from './send-gate.js';
import type { OutboxStore } from './outbox-store.js';
import { parseMeta } from './outbox-store.js';
import { canonicalName } from '../client/names.js';
import { createSentBytes } from './sent-bytes.js';
import { loadStaged, readStagedIfIntact, stagedInMemory } from './staged-body.js';
import type { ClaimedBytes } from './claimed-bytes.js';
import type { EnrollSettings, FaceSeedImage, OutboxRow, StepOutcome } from './types.js';

// Faces: POST /faces returns no face_id (spec-notes.md), so the group listing is how the agent
// learns the id of a face it created, and how it settles an upload whose answer was lost. One
// listing serves every row waiting at that moment; each row only trusts a listing that started
// after its request could have finished.

/** A listing younger than this decides create/update/skip without asking again. */
const VIEW_TTL_MS = 10_000;
/** Listings that must miss a created face before giving up on learning its id. */
const RESOLVE_TRIES = 3;
/**
 * Faces waiting for their id are listed once this many gather (or after a wait, dispatcher.ts).
 * A listing costs the service and us the whole group, so the batch grows with it: a 16th of the
 * group's faces, within these bounds.
 */
const RESOLVE_BATCH_MIN = 64;
const RESOLVE_BATCH_MAX = 256;

interface GroupView {
  faces: FaceRecord[];
  startedAt: number;
  /** The faces by canonical name, built on first use: every upload and resolve looks names up in
   * a listing of the whole group, and normalizing every name of it for each file was quadratic
   * (a million NFC normalizations for a burst of a thousand files). */
  byName?: Map<string, FaceRecord[]>;
}

/** The faces of the view named `name` (canonical), newest (highest id) first. */
function facesNamed(v: GroupView, name: string): readonly FaceRecord[] {
  if (!v.byName) {
    const byName = new Map<string, FaceRecord[]>();
    for (const f of v.faces) {
      const n = canonicalName(f.name);
      const list = byName.get(n);
      if (list) list.push(f);
      else byName.set(n, [f]);
    }
    for (const list of byName.values()) list.sort((a, b) => b.id - a.id);
    v.byName = byName;
  }
  return v.byName.get(name) ?? [];
}

export interface FaceUploaderDeps {
  client: ServiceClient;
  store: OutboxStore;
  commit: Commit;
  settings: Pick<EnrollSettings, 'on_existing_face'>;
  logger: Logger;
  /** Absolute path of a file under enroll.dir. */
  abs(rel: string): string;
  onFaceChanged?: (faceId: string, seed?: FaceSeedImage) => void;
  /** The bytes claims read, so that an upload need not read the staged copy again. */
  claimed?: ClaimedBytes;
}

export type FaceUploader = ReturnType<typeof createFaceUploader>;

export function createFaceUploader(deps: FaceUploaderDeps) {
  const { client, store, logger } = deps;
  let view: GroupView | undefined;
  let listing: Promise<GroupView> | undefined;
  const sent = createSentBytes();

  function refresh(): Promise<GroupView> {
    if (!listing) {
      const startedAt = Date.now();
      listing = client.listFaces().then(
        (faces) => {
          listing = undefined;
          view = { faces, startedAt };
          return view;
        },
        (err: unknown) => {
          listing = undefined;
          throw err;
        },
      );
    }
    return listing;
  }

  /**
   * A listing that started at or after `t` (wall clock: rows' times are stored). Times noted
   * before the clock was set back lie ahead of it: a row's is then past in fact (any listing from
   * now on is later), and a listing's is stale (it may predate the row's POST: taken as fresh, it
   * failed every new face as not listed until the clock caught up).
   */
  async function viewSince(t: number): Promise<GroupView> {
    for (;;) {
      const now = Date.now();
      if (view && view.startedAt >= Math.min(t, now) && view.startedAt <= now) return view;
      await refresh();
    }
  }

  const changed = (faceId: string, seed?: FaceSeedImage) => () => {
    try {
      deps.onFaceChanged?.(faceId, seed);
    } catch (err) {
      logger.warn({ err, faceId }, 'onFaceChanged listener failed');
    }
  };

  /** A face named like the row that was not there before its POST and is no other upload's. */
  function findCreated(v: GroupView, row: OutboxRow): FaceRecord | undefined {
    const pre = new Set(parseMeta(row).preIds ?? []);
    const known = store.knownFaceIds(row.name);
    return facesNamed(v, row.name).find((f) => !pre.has(f.face_id) && !known.has(f.face_id));
  }

  /** With `bytes` (what was sent), the face cache takes the face without downloading it back. */
  function created(face: FaceRecord, reconciled: boolean, bytes: Buffer | undefined, sha256: string): StepOutcome {
    return {
      state: 'done',
      result: { face_id: face.face_id, group_id: face.group_id, id: face.id, action: 'created', ...(reconciled ? { reconciled: true } : {}) },
      after: changed(face.face_id, bytes ? { face, bytes, sha256 } : undefined),
    };
  }

  /** The bytes a resolved row sent, for the face cache; none when the staged copy is not intact (it downloads then). */
  async function sentBytes(row: OutboxRow): Promise<Buffer | undefined> {
    if (!deps.onFaceChanged) return undefined;
    return sent.take(row.id) ?? readStagedIfIntact(row).catch(() => undefined);
  }

  return {
    /** Sends through the gate itself: its durable commit overlaps the requests on the wire. */
    gated: true,

    async upload(row: OutboxRow, signal: AbortSignal, gate: SendGate): Promise<StepOutcome> {
      const v = await viewSince(Date.now() - VIEW_TTL_MS);
      const existing = facesNamed(v, row.name);
      const mode = deps.settings.on_existing_face;
      const meta = parseMeta(row);
      const image: FileUpload = { path: row.staged_path!, filename: row.source_path.split('/').at(-1)!, contentType: meta.contentType ?? 'image/jpeg' };
      if (stagedInMemory(row.kind, row.size)) {
        image.bytes = (await deps.claimed?.take(row.id, row.staged_path!)) ?? await loadStaged(row, deps.abs(row.source_path));
      }
      const first = existing[0];
      if (first && mode === 'skip') {
        return { state: 'done', result: { face_id: first.face_id, group_id: first.group_id, id: first.id, action: 'skipped', reason: `a face named ${row.name} already exists (enroll.on_existing_face: skip)` } };
      }
      if (first && mode === 'update') {
        await deps.commit(() => store.startAttempt(row.id, 'update', { ...meta, targetId: first.face_id }), { durable: true });
        const release = await gate();
        try {
          await client.updateFace(first.face_id, { name: row.name, image }, { signal, retries: 0 });
        } finally {
          release();
        }
        const seed = image.bytes ? { face: { ...first, name: row.name }, bytes: image.bytes, sha256: row.content_sha256 } : undefined;
        return { state: 'done', result: { face_id: first.face_id, group_id: first.group_id, id: first.id, action: 'updated' }, after: changed(first.face_id, seed) };
      }
      // Recorded before the request leaves: after a crash, this is what tells a face we created
      // from one that was already there. Read in the transaction that records it (a read on its
      // own takes and drops SQLite's locks, four fcntl calls).
      await deps.commit(() => {
        const preIds = [...new Set([...existing.map((f) => f.face_id), ...store.knownFaceIds(row.name)])];
        store.startAttempt(row.id, 'create', { ...meta, preIds });
      }, { durable: true });
      const release = await gate();
      try {
        await client.createFace({ name: row.name, image }, { signal, retries: 0 });
      } finally {
        release();
      }
      if (image.bytes && deps.onFaceChanged) {
        sent.keep(row.id, image.bytes);
      }
      return { state: 'resolving' };
    },

    /** Creating twice is what must not happen; an update may simply be sent again. */
    ifUnknown(_applied: Applied, row: OutboxRow): 'retry' | 'reconcile' | 'fail' {
      return row.action === 'create' ? 'reconcile' : 'retry';
    },

    /** Rows whose POST succeeded: find their face_id in a listing made after it. */
    async resolve(rows: OutboxRow[]): Promise<Map<number, StepOutcome>> {
      const v = await viewSince(Math.max(...rows.map((r) => r.updated_at)));
      const out = new Map<number, StepOutcome>();
      const found: Array<[OutboxRow, FaceRecord]> = [];
      for (const row of rows) {
        const face = findCreated(v, row);
        if (face) {
          found.push([row, face]);
          continue;
        }
        const meta = parseMeta(row);
        const tries = (meta.resolveTries ?? 0) + 1;
        if (tries < RESOLVE_TRIES) {
          out.set(row.id, { state: 'resolving', meta: { ...meta, resolveTries: tries } });
        } else {
          out.set(row.id, {
            state: 'failed',
            error: { message: `the service accepted face ${row.name} but ${tries} listings of the group did not show a new face of that name; check 'terminal-agent faces list' before dropping it again`, code: 'TA_ERR_FACE_NOT_LISTED' },
          });
        }
      }
      await Promise.all(found.map(async ([row, face]) => out.set(row.id, created(face, false, await sentBytes(row), row.content_sha256))));
      return out;
    },

    /** Rows whose request may or may not have created the face: a listing settles it. */
    async reconcile(rows: OutboxRow[]): Promise<Map<number, StepOutcome>> {
      const v = await viewSince(Math.max(...rows.map((r) => r.next_attempt_at)));
      const out = new Map<number, StepOutcome>();
      for (const row of rows) {
        const face = findCreated(v, row);
        if (face) {
          logger.info({ name: row.name, faceId: face.face_id }, 'an interrupted upload had created the face: not sending it again');
          out.set(row.id, created(face, true, await sentBytes(row), row.content_sha256));
        } else {
          out.set(row.id, { state: 'queued' });
        }
      }
      return out;
    },

    /** How many faces waiting for their id make a listing worth its cost (RESOLVE_BATCH_MIN). */
    resolveBatch: (): number => Math.min(RESOLVE_BATCH_MAX, Math.max(RESOLVE_BATCH_MIN, Math.ceil((view?.faces.length ?? 0) / 16))),

    /** A PUT target that is gone: the next attempt decides again from a fresh listing. */
    forget(faceId: string): void {
      if (view) view = { faces: view.faces.filter((f) => f.face_id !== faceId), startedAt: 0 };
    },
  };
}
