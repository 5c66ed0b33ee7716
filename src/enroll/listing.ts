import { constants } from 'node:fs';
import type { Dirent } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Db } from '../db/database.js';
import { IMAGE_EXTS, classify, isIgnoredName, type Layout } from './layout.js';
import { resultPathFor } from './result-files.js';
import { KINDS, type Kind } from './types.js';

/** A result file an operator swapped for a link (or a FIFO) is not shown: never followed, never waited on. */
const NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

// What the enrollment folders hold, for the web console: files waiting in the inbox, rows of the
// outbox on their way, and the finished files in done/ and failed/ with what their result files
// say. Result file names come from result-files.ts (the one place that names them).

export type ItemState = 'queued' | 'in_flight' | 'done' | 'failed';

export interface EnrollItem {
  kind: Kind;
  /** Path inside the state's kind folder, POSIX style (`alice.jpg`, `alice/2.jpg`). */
  name: string;
  state: ItemState;
  size: number;
  at: string;
  media: 'image' | 'audio' | 'text';
  /** For in_flight: the outbox step (sending, unknown, training...) and the attempts so far. */
  step?: string;
  attempts?: number;
  result?: Record<string, unknown>;
  error?: { code: string; message: string };
}

export interface EnrollListing {
  queued: EnrollItem[];
  in_flight: EnrollItem[];
  done: EnrollItem[];
  failed: EnrollItem[];
  /** How many items each state has beyond the ones listed (newest first). */
  more: Record<ItemState, number>;
}

const AUDIO = new Set(['.wav', '.pcm']);

export function mediaOf(name: string): EnrollItem['media'] {
  const ext = posix.extname(name).toLowerCase();
  if ((IMAGE_EXTS as readonly string[]).includes(ext)) return 'image';
  if (AUDIO.has(ext)) return 'audio';
  return 'text';
}

interface Found {
  kind: Kind;
  name: string;
  abs: string;
}

/** Files under `base` down to `depth` folder levels, skipping dotfiles and temp names. */
async function walk(base: string, depth: number, prefix = ''): Promise<{ rel: string; abs: string }[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(base, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: { rel: string; abs: string }[] = [];
  for (const e of entries) {
    if (isIgnoredName(e.name)) continue;
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (depth > 1) out.push(...(await walk(join(base, e.name), depth - 1, rel)));
    } else if (e.isFile()) out.push({ rel, abs: join(base, e.name) });
  }
  return out;
}

async function withStat(items: Found[], state: ItemState): Promise<EnrollItem[]> {
  const out: EnrollItem[] = [];
  for (const f of items) {
    try {
      const st = await stat(f.abs);
      out.push({ kind: f.kind, name: f.name, state, size: st.size, at: new Date(st.mtimeMs).toISOString(), media: mediaOf(f.name) });
    } catch {
      // gone meanwhile (taken by the pipeline)
    }
  }
  return out.sort((a, b) => b.at.localeCompare(a.at));
}

async function readSidecar(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    const v = JSON.parse(await readFile(path, { encoding: 'utf8', flag: NO_FOLLOW })) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function isResultFile(kind: Kind, rel: string, all: Set<string>): boolean {
  if (rel.endsWith('.json')) return true;
  // A speaker's text travels with its WAV: speakers/LABEL.txt beside LABEL.wav.
  if (kind === 'speakers' && rel.endsWith('.txt')) return all.has(rel.replace(/\.txt$/, '.wav'));
  return false;
}

export async function listEnrollment(layout: Layout, db: Db, opts: { limit?: number } = {}): Promise<EnrollListing> {
  const limit = opts.limit ?? 200;
  const rows = db
    .prepare(`SELECT kind, source_path, state, size, attempts, last_error, last_error_code, updated_at FROM outbox
      WHERE finalized = 0 ORDER BY id LIMIT 1000`)
    .all() as { kind: Kind; source_path: string; state: string; size: number; attempts: number; last_error: string | null; last_error_code: string | null; updated_at: number }[];
  const active = new Set(rows.map((r) => r.source_path));
  const failedRow = db.prepare(`SELECT last_error, last_error_code FROM outbox WHERE kind = ? AND final_path = ? AND state = 'failed' ORDER BY id DESC LIMIT 1`);
  const inFlight: EnrollItem[] = rows.map((r) => ({
    kind: r.kind,
    name: r.source_path.slice(r.kind.length + 1),
    state: 'in_flight',
    size: r.size,
    at: new Date(r.updated_at).toISOString(),
    media: mediaOf(r.source_path),
    step: r.state,
    attempts: r.attempts,
    ...(r.last_error ? { error: { code: r.last_error_code ?? 'TA_ERR_FAILURE', message: r.last_error } } : {}),
  }));

  const queued: Found[] = [];
  const done: Found[] = [];
  const failed: Found[] = [];
  for (const kind of KINDS) {
    const depth = kind === 'faces' ? 2 : 1;
    for (const f of await walk(layout.inbox(kind), depth)) {
      const rel = `${kind}/${f.rel}`;
      if (classify(rel) && !active.has(rel)) queued.push({ kind, name: f.rel, abs: f.abs });
    }
    for (const [base, into] of [[layout.done(kind), done], [layout.failed(kind), failed]] as const) {
      const files = await walk(base, depth);
      const all = new Set(files.map((f) => f.rel));
      for (const f of files) {
        // Knowledge files stay where the operator keeps them: only their result files are here.
        if (kind === 'knowledge' ? f.rel.endsWith('.json') : !isResultFile(kind, f.rel, all)) {
          into.push({ kind, name: kind === 'knowledge' ? f.rel.replace(/(\.error)?\.json$/, '') : f.rel, abs: f.abs });
        }
      }
    }
  }

  const more = { queued: 0, in_flight: Math.max(0, inFlight.length - limit), done: 0, failed: 0 };
  const cut = async (found: Found[], state: ItemState) => {
    const items = await withStat(found, state);
    more[state as 'queued' | 'done' | 'failed'] = Math.max(0, items.length - limit);
    return items.slice(0, limit);
  };
  const doneItems = await cut(done, 'done');
  const failedItems = await cut(failed, 'failed');
  for (const [items, isFailed] of [[doneItems, false], [failedItems, true]] as const) {
    for (const item of items) {
      const sidecar = resultPathFor(layout, item.kind, isFailed ? 'failed' : 'done', item.name);
      const body = await readSidecar(sidecar);
      if (!body) {
        // The file moved a moment ago and its result file is being written: the outbox knows why.
        const row = isFailed ? failedRow.get(item.kind, item.name) as { last_error: string | null; last_error_code: string | null } | undefined : undefined;
        if (row) item.error = { code: row.last_error_code ?? 'TA_ERR_FAILURE', message: row.last_error ?? 'failed' };
        continue;
      }
      if (isFailed) {
        item.error = { code: String(body.code ?? 'TA_ERR_FAILURE'), message: String(body.error ?? 'failed') };
        // A refused face keeps its measurements: the console shows them and the boxes found.
        if (body.face_check && typeof body.face_check === 'object') item.result = { face_check: body.face_check };
      } else {
        item.result = body;
      }
    }
  }
  return { queued: await cut(queued, 'queued'), in_flight: inFlight.slice(0, limit), done: doneItems, failed: failedItems, more };
}

/**
 * The absolute path of a listed file, for previews; undefined when `name` tries to leave the
 * folder or is not a file this state can hold.
 */
export function enrollFilePath(layout: Layout, kind: Kind, state: ItemState, name: string): string | undefined {
  const parts = name.split('/');
  if (parts.length > 2 || parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.') || p.includes('\\'))) return undefined;
  if (name.endsWith('.json')) return undefined;
  const base = state === 'done' ? layout.done(kind) : state === 'failed' ? layout.failed(kind) : layout.inbox(kind);
  return join(base, ...parts);
}
