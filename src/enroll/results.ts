import { constants, existsSync } from 'node:fs';
import { copyFile, lstat, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../util/fs-atomic.js';
import { sha256OfFile } from '../util/file-hash.js';
import { removeStateFile } from '../util/state-fs.js';
import type { DirSync } from './dir-sync.js';
import type { EnrollFs } from './enroll-fs.js';
import type { Layout } from './layout.js';
import { companionRel, splitInner, toRel } from './layout.js';
import { EnrollPathError, createConfinedDirs, splitRel, type ConfinedDirs, type DirRef } from './confined-dirs.js';
import { fitName, resultFileFor, resultPathFor } from './result-files.js';
import type { OutboxStore } from './outbox-store.js';
import { parseMeta } from './outbox-store.js';
import type { FaceCheckRecord } from './face-check-step.js';
import type { OutboxRow } from './types.js';
import type { Commit } from './commit-batcher.js';

// The operator-visible end of every file: the original moved to done/<kind>/ or failed/<kind>/
// with NAME.json or NAME.error.json beside it. Idempotent, so that a crash half-way is finished
// by the next start: the target is chosen once, stored with the outcome, and moves skip what
// already moved.

export interface ErrorFile {
  /** The original's name in failed/<kind>/ (its result file's name may be shortened: result-files.ts). */
  file: string;
  error: string;
  code: string;
  status: number | null;
  attempts: number;
  at: string;
  /** Faces: the face check's verdict and measurements. */
  face_check?: FaceCheckRecord;
}

/**
 * Where a finished file goes, relative to done/<kind> or failed/<kind>: `alice.jpg`, or
 * `alice.2.jpg` when an earlier alice is there or on its way there. Synchronous (a few access
 * calls, cheaper in place than as thread-pool trips), so that the choice and its reservation are
 * one step; callers make it before the transaction that records it, not inside, where it would
 * hold agent.db's write lock while it waits on enroll.dir.
 *
 * A reservation holds the result file's names too, until that file is written: `alice.jpg` and
 * `alice.png` (or `folder` and `folder.wav`) placed before either result exists would otherwise
 * both get `alice.json`, and the second result would replace the first.
 */
export function createPlacer(layout: Layout) {
  const reserved = new Set<string>();
  /** Each placed original's absolute path, with the names reserved for it (namesOf). */
  const held = new Map<string, string[]>();
  const taken = (p: string) => reserved.has(p) || existsSync(p);
  const namesOf = (kind: OutboxRow['kind'], abs: string): string[] => {
    const dir = dirname(abs);
    const placed = abs.slice(dir.length + 1);
    return [abs, join(dir, resultFileFor(kind, 'done', placed)), join(dir, resultFileFor(kind, 'failed', placed))];
  };
  const hold = (abs: string, names: string[]): void => {
    for (const n of names) reserved.add(n);
    held.set(abs, names);
  };
  const release = (abs: string): void => {
    for (const n of held.get(abs) ?? [abs]) reserved.delete(n);
    held.delete(abs);
  };
  /** Where an original placed at `rel` goes: done/<kind>/rel or failed/<kind>/rel. */
  const target = (kind: OutboxRow['kind'], failed: boolean, rel: string): string => layout.placed(kind, failed ? 'failed' : 'done', rel);
  return {
    place(row: Pick<OutboxRow, 'kind' | 'source_path'>, failed: boolean): string | null {
      if (row.kind === 'knowledge') return null;
      const { folder, stem, ext } = splitInner(row.source_path.slice(row.kind.length + 1));
      for (let k = 1; ; k++) {
        // The original's own name always fits (it exists); a `.k` suffix may not: fitName cuts.
        // Without an extension `.k` would read as one, and every k would share the result name.
        const placed = k === 1 ? `${stem}${ext}` : fitName(ext ? `${stem}.${k}` : `${stem}-${k}`, ext);
        const rel = folder ? `${folder}/${placed}` : placed;
        const abs = target(row.kind, failed, rel);
        const names = namesOf(row.kind, abs);
        if (!names.some(taken)) {
          hold(abs, names);
          return rel;
        }
      }
    },
    /**
     * A place chosen and then not recorded (the transaction that was to store it failed): free
     * again, or the next attempt would find its own reservation and take `NAME.2`.
     */
    unplace(row: Pick<OutboxRow, 'kind'>, rel: string, failed: boolean): void {
      release(target(row.kind, failed, rel));
    },
    /** Targets chosen before a restart whose move is still to come. */
    reserve(row: Pick<OutboxRow, 'kind' | 'state' | 'final_path'>): void {
      if (!row.final_path) return;
      const abs = target(row.kind, row.state === 'failed', row.final_path);
      hold(abs, namesOf(row.kind, abs));
    },
    /** The original moved and its result file written: both are on disk, seen by existsSync. */
    release,
  };
}

export type Placer = ReturnType<typeof createPlacer>;

/**
 * True when the path still holds the file that was claimed (an operator may have replaced it).
 * Looked at without following a link: the name is moved as it is, never what a link names.
 */
export async function sameFile(path: string, row: OutboxRow, fs: Pick<EnrollFs, 'lstat'>): Promise<boolean> {
  const st = await fs.lstat(path).catch(() => undefined);
  const ino = parseMeta(row).sourceIno;
  return !!st && st.size === row.source_size && Math.floor(st.mtimeMs) === row.source_mtime_ms && (ino === undefined || st.ino === ino);
}

/**
 * Puts the claimed original at `dest`. When the operator replaced or removed it after the claim,
 * the staged copy goes there instead if it still holds the bytes claimed: it is the last copy of
 * what was uploaded (or refused), and done/ and failed/ keep one original beside every result
 * file (deleting it left a NAME.json naming a file that was nowhere). Not
 * when the name now holds the staged inode itself (rewritten in place under a hard link: those
 * bytes are a new drop, still in the inbox), nor a copy a power failure tore (its hash differs).
 * The original is looked at and moved where `fs` makes calls on enroll.dir (enroll-fs.ts).
 */
export async function placeOriginal(source: string | undefined, row: OutboxRow, dest: string, fs: Pick<EnrollFs, 'lstat' | 'rename'>): Promise<void> {
  if (source !== undefined && (await sameFile(source, row, fs))) {
    await fs.rename(source, dest);
    return;
  }
  const staged = row.staged_path;
  if (!staged || !row.content_sha256) return;
  const st = await lstat(staged).catch(() => undefined);
  if (!st?.isFile()) return;
  const now = source === undefined ? undefined : await lstat(source).catch(() => undefined);
  if (now && now.ino === st.ino && now.dev === st.dev) return;
  if ((await sha256OfFile(staged).catch(() => '')) !== row.content_sha256) return;
  await rename(staged, dest).catch(async (err: NodeJS.ErrnoException) => {
    // enroll.dir on another file system than state_dir.
    if (err.code !== 'EXDEV') throw err;
    await copyFile(staged, dest, constants.COPYFILE_EXCL);
  });
}

/** The name the original has (or will have) in done/ or failed/. */
function placedName(row: OutboxRow): string {
  return (row.final_path ?? row.source_path).split('/').at(-1)!;
}

export function errorFileOf(row: OutboxRow): ErrorFile {
  const { faceCheck } = parseMeta(row);
  return {
    file: placedName(row),
    error: row.last_error ?? 'failed',
    code: row.last_error_code ?? 'TA_ERR_FAILURE',
    status: row.last_status,
    attempts: row.attempts,
    at: new Date(row.updated_at).toISOString(),
    ...(faceCheck ? { face_check: faceCheck } : {}),
  };
}

export function doneFileOf(row: OutboxRow): Record<string, unknown> {
  const result = row.result_json ? (JSON.parse(row.result_json) as Record<string, unknown>) : {};
  const meta = parseMeta(row);
  return {
    kind: row.kind,
    name: row.name,
    ...result,
    ...(meta.duplicateOf !== undefined ? { duplicate_of_upload: meta.duplicateOf } : {}),
    ...(meta.faceCheck ? { face_check: meta.faceCheck } : {}),
    source: row.source_path,
    file: placedName(row),
    sha256: row.content_sha256 || undefined,
    attempts: row.attempts,
    at: new Date(row.updated_at).toISOString(),
  };
}

/** writeFileAtomic, with the folder fsync shared with the other results written meanwhile; it
 * also makes the original's rename into the same folder durable before the row is finalized. */
function writeResultFile(path: string, body: string, syncDir: DirSync): Promise<void> {
  return writeFileAtomic(path, body, { syncDir, dirExists: true });
}

/**
 * The original's folder and the one it goes to, each held open (confined-dirs.ts): the source
 * without following any link on the way (a folder swapped for a link leaves its file where it
 * is: `src` undefined), the destination made when missing.
 */
export async function openFolders(dirs: ConfinedDirs, sourceRel: string, destRel: string): Promise<{ src: DirRef | undefined; dest: DirRef }> {
  const dest = await dirs.open(destRel, true);
  const src = await dirs.open(splitRel(sourceRel).dir).catch((err: unknown) => {
    if (err instanceof EnrollPathError || (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return dirs.close(dest).then(() => Promise.reject(err as Error));
  });
  return { src, dest };
}

/** Moves the original and writes its result file; returns that file's absolute path. */
export async function finalizeRow(layout: Layout, store: OutboxStore, commit: Commit, placer: Placer, row: OutboxRow, syncDir: DirSync, fs: EnrollFs): Promise<string> {
  const failed = row.state === 'failed';
  const state = failed ? 'failed' : 'done';
  const dirs = createConfinedDirs(layout.root, () => fs.onLoop);
  let resultFile: string;
  if (row.kind === 'knowledge') {
    const body = `${JSON.stringify(failed ? errorFileOf(row) : doneFileOf(row), null, 2)}\n`;
    // A mirror: the file stays where the operator keeps it; only the latest outcome is recorded.
    resultFile = resultPathFor(layout, 'knowledge', state, row.name);
    const written = splitRel(toRel(layout.root, resultFile)!);
    await dirs.with(written.dir, true, (d) => writeFileAtomic(`${d.path}/${written.base}`, body, { dirExists: true }));
    if (!failed) {
      const stale = splitRel(toRel(layout.root, resultPathFor(layout, 'knowledge', 'failed', row.name))!);
      await dirs.with(stale.dir, true, (d) => rm(`${d.path}/${stale.base}`, { force: true }));
    }
  } else {
    let target = row.final_path;
    if (!target) {
      // Rows finished by the recovery at start-up. Durable: the outcome must be on disk before
      // the original leaves the inbox.
      const chosen = placer.place(row, failed)!;
      await commit(() => store.setFinalPath(row.id, chosen), { durable: true });
      target = chosen;
    }
    const dest = layout.placed(row.kind, state, target);
    const destRel = splitRel(toRel(layout.root, dest)!);
    const { src, dest: destDir } = await openFolders(dirs, row.source_path, destRel.dir);
    try {
      const srcBase = splitRel(row.source_path).base;
      await placeOriginal(src ? `${src.path}/${srcBase}` : undefined, row, `${destDir.path}/${destRel.base}`, fs);
      const companion = parseMeta(row).companion;
      if (companion && src) await rename(`${src.path}/${splitRel(companion).base}`, `${destDir.path}/${splitRel(companionRel(target)).base}`).catch(() => undefined);
      const body = `${JSON.stringify(failed ? errorFileOf({ ...row, final_path: target }) : doneFileOf({ ...row, final_path: target }), null, 2)}\n`;
      resultFile = resultPathFor(layout, row.kind, state, target);
      await writeResultFile(`${destDir.path}/${splitRel(toRel(layout.root, resultFile)!).base}`, body, syncDir);
    } finally {
      await dirs.close(destDir).catch(() => undefined);
      if (src) await dirs.close(src).catch(() => undefined);
    }
    placer.release(dest);
  }
  await commit(() => store.finalize(row.id));
  if (row.staged_path) removeStateFile(row.staged_path);
  return resultFile;
}
