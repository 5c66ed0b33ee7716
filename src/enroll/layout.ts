import { chmod, stat } from 'node:fs/promises';
import { join, posix, sep } from 'node:path';
import { createConfinedDirs, type DirRef } from './confined-dirs.js';
import { KINDS, type Kind } from './types.js';
import { makeDir } from '../util/make-dir.js';
import { AgentError, describeError } from '../errors.js';

// The folder contract of product.md ("Enrollment folders"): what an operator may drop where, and
// where the results go. Paths inside the agent are kept relative to enroll.dir, POSIX style.

export const IMAGE_EXTS = ['.jpg', '.jpeg', '.png', '.bmp', '.webp'] as const;
const AUDIO_EXTS: Record<'voiceprints' | 'speakers', readonly string[]> = {
  voiceprints: ['.wav', '.pcm'],
  speakers: ['.wav'],
};
const KNOWLEDGE_EXTS = ['.txt', '.md'];
const TEMP_SUFFIXES = ['.part', '.tmp', '.crdownload', '.swp', '~'];

export interface Candidate {
  kind: Kind;
  /** NAME, LABEL or knowledge ID. */
  name: string;
  /** Lower-case extension with the dot. */
  ext: string;
  /** Relative to enroll.dir, POSIX separators. */
  rel: string;
  /** Relative to the kind's folder (e.g. `alice.jpg`, `alice/1.jpg`). */
  inner: string;
}

/** Where a finished file went: done/<kind>/ or failed/<kind>/. */
export type ResultState = 'done' | 'failed';

export interface Layout {
  root: string;
  inbox(kind: Kind): string;
  done(kind: Kind): string;
  failed(kind: Kind): string;
  /** done(kind) or failed(kind). */
  finished(kind: Kind, state: ResultState): string;
  /**
   * The absolute path of a finished original placed at `rel` (relative to its state's kind
   * folder, POSIX style: `alice.jpg`, `alice/2.jpg`): the one rule for the placer's reservations,
   * the moves into done/ and failed/, and the retry out of failed/.
   */
  placed(kind: Kind, state: ResultState, rel: string): string;
  staging: string;
  abs(rel: string): string;
}

/** A segment that is empty, `.` or `..`: a path with one is not plain (see joinUnder). */
const NOT_PLAIN = /(?:^|\/)\.{0,2}(?:\/|$)/;

/**
 * path.join(base, ...rel.split('/')) for a `base` that is path.join's own output. A plain `rel`,
 * the only kind the agent makes (a listing's names, chokidar's paths made relative, the outbox's
 * source and final paths), is appended as it is: path.join normalizes character by character,
 * several times per file in a burst. Any other still goes through path.join.
 */
export function joinUnder(base: string, rel: string): string {
  return NOT_PLAIN.test(rel) ? join(base, ...rel.split('/')) : folderPrefix(base) + rel;
}

/** What a path under `dir` starts with: `dir` and a separator (none for `.`, as path.join drops it). */
function folderPrefix(dir: string): string {
  return dir === '.' ? '' : dir.endsWith(sep) ? dir : dir + sep;
}

export function createLayout(dir: string, stateDir: string): Layout {
  const folders = (parent: string[]) => Object.fromEntries(KINDS.map((k) => [k, join(dir, ...parent, k)])) as Record<Kind, string>;
  const inbox = folders([]);
  const done = folders(['done']);
  const failed = folders(['failed']);
  const root = join(dir);
  const finished = { done, failed };
  return {
    root: dir,
    inbox: (kind) => inbox[kind],
    done: (kind) => done[kind],
    failed: (kind) => failed[kind],
    finished: (kind, state) => finished[state][kind],
    placed: (kind, state, rel) => joinUnder(finished[state][kind], rel),
    staging: join(stateDir, 'enroll-staging'),
    abs: (rel) => joinUnder(root, rel),
  };
}

/** Each kind's folders of the contract under enroll.dir: its inbox, done/<kind>, failed/<kind>. */
export function kindFolders(layout: Layout): string[] {
  return KINDS.flatMap((kind) => [layout.inbox(kind), layout.done(kind), layout.failed(kind)]);
}

/**
 * Creates every folder of the contract that is missing (operators find them ready to use), each
 * reached without following a link an operator could have made (confined-dirs.ts), and gives
 * enroll.dir, done/ and failed/ the sticky bit when they are the daemon's and group-writable: the
 * operators who drop files there cannot rename or replace the folders the daemon works in.
 */
export async function ensureFolders(layout: Layout): Promise<void> {
  try {
    if (!(await stat('/proc/self/fd').catch(() => undefined))?.isDirectory()) {
      throw new Error('/proc is not mounted: the agent reaches the folders under enroll.dir through /proc/self/fd, without following links');
    }
    await makeDir(layout.root);
    const dirs = createConfinedDirs(layout.root, () => false);
    for (const rel of ['', 'done', 'failed']) await dirs.with(rel, true, lockFolder);
    for (const folder of kindFolders(layout)) await dirs.with(toRel(layout.root, folder)!, true, async () => undefined);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AgentError(`enroll.dir ${layout.root} cannot be used: ${describeError(err)}; if it lives on a USB stick or a network share, mount it (a dangling symlink gives ENOENT), else create it writable by the agent's user`, {
      cause: err, details: { dir: layout.root, ...(code ? { errno: code } : {}) },
    });
  }
  await makeDir(layout.staging);
}

/** Adds the sticky bit to a folder of the daemon's that others may write (best effort: vfat has no modes). */
async function lockFolder(dir: DirRef): Promise<void> {
  const uid = process.getuid?.();
  if (dir.st.uid !== uid || (dir.st.mode & 0o022) === 0 || (dir.st.mode & 0o1000) !== 0) return;
  await chmod(dir.path, (dir.st.mode & 0o7777) | 0o1000).catch(() => undefined);
}

/** Dotfiles and the names copy tools give to unfinished files are left alone until renamed. */
export function isIgnoredName(base: string): boolean {
  if (base.startsWith('.')) return true;
  const lower = base.toLowerCase();
  return TEMP_SUFFIXES.some((s) => lower.endsWith(s));
}

export function toRel(root: string, absPath: string): string | undefined {
  const prefix = folderPrefix(root);
  if (!absPath.startsWith(prefix)) return undefined;
  return absPath.slice(prefix.length).split(sep).join('/');
}

function extOf(base: string): string {
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot).toLowerCase();
}

export function stemOf(base: string): string {
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? base : base.slice(0, dot);
}

/**
 * What `rel` would be in its kind's folder, whatever its extension: a file in it (or, for faces,
 * in a folder of it), with no temp or hidden name on the way; else undefined.
 */
function candidateAt(rel: string): Candidate | undefined {
  const parts = rel.split('/');
  if (parts.some((p) => p === '' || isIgnoredName(p))) return undefined;
  const kind = parts[0] as Kind;
  if (!(KINDS as readonly string[]).includes(kind)) return undefined;
  const base = parts.at(-1)!;
  const inner = parts.slice(1).join('/');
  if (parts.length === 2) return { kind, name: stemOf(base), ext: extOf(base), rel, inner };
  if (parts.length === 3 && kind === 'faces') return { kind, name: parts[1]!, ext: extOf(base), rel, inner };
  return undefined;
}

/**
 * What a path under enroll.dir is, or undefined when it is nothing to act on (result folders,
 * temp names, unknown extensions, too deep, a speaker's companion .txt).
 */
export function classify(rel: string): Candidate | undefined {
  const c = candidateAt(rel);
  if (!c) return undefined;
  const exts: readonly string[] = c.kind === 'faces' ? IMAGE_EXTS : c.kind === 'knowledge' ? KNOWLEDGE_EXTS : AUDIO_EXTS[c.kind];
  return exts.includes(c.ext) ? c : undefined;
}

/**
 * A candidate for something that is not a regular file (a FIFO, socket, device node, or a folder
 * where a file belongs), whatever its extension: it is refused with a reason instead of being
 * left in place unexplained. Knowledge is left out: it is a mirror of entries by file name, and
 * only its .txt/.md names (classify) are entries. A speaker's LABEL.txt is judged by the claim of
 * its LABEL.wav, which takes it along.
 */
export function classifyNotAFile(rel: string): Candidate | undefined {
  const c = candidateAt(rel);
  return !c || c.kind === 'knowledge' || (c.kind === 'speakers' && c.ext === '.txt') ? undefined : c;
}

/** The speaker's text file that goes with `speakers/LABEL.wav`. */
export function speakerTextRel(c: Candidate): string {
  return posix.join('speakers', `${c.name}.txt`);
}

/**
 * Where a speaker sample's text (`NAME.txt`, beside `NAME.wav`) goes with its WAV placed at `rel`:
 * the same folder and stem, even when the WAV got a `.2` (the stem is the placed one).
 */
export function companionRel(rel: string): string {
  const { folder, stem } = splitInner(rel);
  return folder ? `${folder}/${stem}.txt` : `${stem}.txt`;
}

/** Splits `a/b/name.ext` into the folder part and the stem, for naming result files. */
export function splitInner(inner: string): { folder: string; stem: string; ext: string } {
  const slash = inner.lastIndexOf('/');
  const folder = slash < 0 ? '' : inner.slice(0, slash);
  const base = slash < 0 ? inner : inner.slice(slash + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? { folder, stem: base, ext: '' } : { folder, stem: base.slice(0, dot), ext: base.slice(dot) };
}
