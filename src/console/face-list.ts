import type { AgentStatus } from '../control/types.js';
import type { CachedFace } from '../faces/types.js';
import { PreparedJson } from './http.js';

// GET /api/faces: the gallery's list. For a big group it is the console's costliest answer, and
// the gallery asks again every minute while it is open, and at every
// sync. So the list is kept, as the API's objects, their JSON text and its gzip, until the face
// cache changes (the cache's version: a new object at every write to it) or KEEP_MS after the last
// ask, when it is let go: a daemon nobody browses holds none of it.

export const KEEP_MS = 120_000;

export interface ApiFace {
  face_id: string;
  name: string;
  id: number;
  updated_at: string;
  thumb_url: string;
  image_url: string;
}

export interface FaceListDeps {
  faces(): unknown[] | Promise<unknown[]>;
  /** Changes (identity) whenever faces() may answer differently; undefined: never keep. */
  version?(): object | undefined;
  status(): AgentStatus | Promise<AgentStatus>;
  keepMs?: number;
}

interface Kept {
  version: object;
  faces: ApiFace[];
  text?: string;
  /** The last whole answer (its fields past the list as the key), with its gzip once made. */
  answer?: { key: string; json: PreparedJson };
}

export function createFaceList(deps: FaceListDeps) {
  const keepMs = deps.keepMs ?? KEEP_MS;
  let kept: Kept | undefined;
  let timer: NodeJS.Timeout | undefined;

  function letGoLater(): void {
    clearTimeout(timer);
    timer = setTimeout(() => {
      kept = undefined;
    }, keepMs);
    timer.unref();
  }

  async function current(): Promise<Kept> {
    // Read before the list: a write in between gives a newer list under an older version, which
    // the next ask finds changed and reads again.
    const version = deps.version?.();
    if (kept && version !== undefined && kept.version === version) {
      letGoLater();
      return kept;
    }
    const faces = ((await deps.faces()) as CachedFace[]).map(apiFace);
    const fresh: Kept = { version: version ?? {}, faces };
    kept = version === undefined ? undefined : fresh;
    if (kept) letGoLater();
    return fresh;
  }

  return {
    /** The answer to GET /api/faces, `q` filtering by name or face_id (case-insensitive). */
    async answer(q: string): Promise<PreparedJson | Record<string, unknown>> {
      const list = await current();
      const s = await deps.status();
      const tail = {
        total: list.faces.length,
        synced_at: s.faces.last_ok_sync_at,
        last_sync: s.faces.last_sync,
        sync_state: (s.components.faces as { state?: string } | undefined)?.state ?? null,
      };
      if (q) {
        const faces = list.faces.filter((f) => f.name.toLowerCase().includes(q) || f.face_id.toLowerCase().includes(q));
        return { faces, ...tail, matched: faces.length };
      }
      const key = JSON.stringify({ ...tail, matched: list.faces.length });
      if (list.answer?.key !== key) {
        list.text ??= JSON.stringify(list.faces);
        list.answer = { key, json: new PreparedJson(`{"faces":${list.text},${key.slice(1)}`) };
      }
      return list.answer.json;
    },
    /** Lets go of the kept list (the console stops). */
    close(): void {
      clearTimeout(timer);
      timer = undefined;
      kept = undefined;
    },
  };
}

function apiFace(f: CachedFace): ApiFace {
  const id = encodeURIComponent(f.face_id);
  const v = f.image_sha256.slice(0, 16);
  return { face_id: f.face_id, name: f.name, id: f.id, updated_at: f.updated_at, thumb_url: `/api/faces/${id}/thumb?v=${v}`, image_url: `/api/faces/${id}/image?v=${v}` };
}
