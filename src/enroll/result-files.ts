import { constants } from 'node:fs';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stemOf, type Layout, type ResultState } from './layout.js';
import type { Kind } from './types.js';

/** A result file an operator swapped for a link (or a FIFO) is not shown: never followed, never waited on. */
const NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

// The names of result files, in one place: the agent writes them, and the web console finds them
// to show a reason or to retry a failed file. `alice.jpg` in done/faces/ gets `alice.json`, in
// failed/faces/ `alice.error.json`. A name is at most NAME_MAX (255) bytes on Linux file systems,
// so a 250-byte original would have no room for ".error.json": when stem plus suffix does not
// fit, the stem is cut (on a character boundary) and `~` plus 12 hex characters of the SHA-256 of
// the whole original name are added: `aaaa…a~3f2a9c01b7de.error.json`, always <= 255 bytes and
// always the same for the same name. Every result file also holds `file`, the original's name.

export const NAME_MAX_BYTES = 255;

export type { ResultState } from './layout.js';

const SUFFIX: Record<ResultState, string> = { done: '.json', failed: '.error.json' };

/** The longest prefix of `s` that is at most `bytes` bytes of UTF-8, cut between characters. */
function cutToBytes(s: string, bytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (used + n > bytes) break;
    out += ch;
    used += n;
  }
  return out;
}

/**
 * `stem + tail` when it fits in NAME_MAX bytes, else the stem cut short with `~HASH` before the
 * tail; `key` (the whole original name) feeds the hash so that two long names stay apart.
 */
export function fitName(stem: string, tail: string, key: string = stem + tail): string {
  if (Buffer.byteLength(stem + tail, 'utf8') <= NAME_MAX_BYTES) return stem + tail;
  const hash = `~${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
  return cutToBytes(stem, NAME_MAX_BYTES - Buffer.byteLength(hash + tail, 'utf8')) + hash + tail;
}

/**
 * The result file's name, in the same folder as the original. `name` is the original's base name
 * as it lies in done/<kind>/ or failed/<kind>/ (`alice.jpg`, `1.jpg` inside `alice/`); for
 * knowledge it is the entry ID (the file stays in knowledge/, results go to done|failed/knowledge/).
 */
export function resultFileFor(kind: Kind, state: ResultState, name: string): string {
  const stem = kind === 'knowledge' ? name : stemOf(name);
  return fitName(stem, SUFFIX[state], name);
}

/**
 * The result file's absolute path. `rel` is the original's path relative to done/<kind>/ or
 * failed/<kind>/ (`alice.jpg`, `alice/1.jpg`), or the knowledge ID.
 */
export function resultPathFor(layout: Layout, kind: Kind, state: ResultState, rel: string): string {
  const cut = kind === 'knowledge' ? 0 : rel.lastIndexOf('/') + 1;
  return layout.placed(kind, state, rel.slice(0, cut) + resultFileFor(kind, state, rel.slice(cut)));
}

export interface ResultEntry {
  /** The original, relative to done/<kind>/ or failed/<kind>/. */
  rel: string;
  /** Its result file's absolute path. */
  resultPath: string;
  /** The result file's contents; undefined when it is missing or unreadable. */
  result?: Record<string, unknown>;
}

/**
 * The originals in done/<kind>/ or failed/<kind>/ (and one level of person folders for faces),
 * each with its result file: what a console lists to show reasons or offer a retry.
 */
export async function listResults(layout: Layout, kind: Exclude<Kind, 'knowledge'>, state: ResultState): Promise<ResultEntry[]> {
  const base = layout.finished(kind, state);
  const out: ResultEntry[] = [];
  const visit = async (folder: string): Promise<void> => {
    const entries = await readdir(join(base, ...(folder ? [folder] : [])), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const rel = folder ? `${folder}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!folder && kind === 'faces') await visit(e.name);
        continue;
      }
      // Result files, their temp files while being written, and a speaker's .txt are not originals.
      if (e.name.startsWith('.') || e.name.endsWith('.json') || (kind === 'speakers' && e.name.endsWith('.txt'))) continue;
      const resultPath = resultPathFor(layout, kind, state, rel);
      const text = await readFile(resultPath, { encoding: 'utf8', flag: NO_FOLLOW }).catch(() => undefined);
      let result: Record<string, unknown> | undefined;
      try {
        result = text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        result = undefined;
      }
      out.push({ rel, resultPath, ...(result ? { result } : {}) });
    }
  };
  await visit('');
  return out;
}
