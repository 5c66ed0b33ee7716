import { randomBytes } from 'node:crypto';
import { link, lstat, open, readdir, rename, rm, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Db } from '../db/database.js';
import { AgentError, BusyError, InvalidInputError, UsageError } from '../errors.js';
import { fsyncDir } from '../util/fs-atomic.js';
import { hasControlChar } from '../config/plain-checks.js';
import { classify, companionRel, splitInner, type Layout } from './layout.js';
import { createConfinedDirs, splitRel, type ConfinedDirs, type DirRef } from './confined-dirs.js';
import { resultPathFor } from './result-files.js';
import { KINDS, type Kind } from './types.js';

// Files put into the enrollment folders by the agent itself (the web console): an upload is
// written under a hidden name the watcher ignores, fsynced, then linked to its real name in one
// step, so the exactly-once pipeline sees a whole file or nothing. A retry moves a failed file
// back from failed/<kind>/ under the name it was dropped with.

const UPLOAD_PREFIX = '.upload-';
/** The longest name the console takes for an upload or a retry (a file system's NAME_MAX is 255). */
const DROP_NAME_MAX_BYTES = 240;

export class TooLargeError extends InvalidInputError {
  override readonly code = 'TA_ERR_TOO_LARGE';
}

export class NoSuchFileError extends AgentError {
  override readonly code = 'TA_ERR_NOT_FOUND';
}

export function parseKind(v: unknown): Kind {
  if (typeof v === 'string' && (KINDS as readonly string[]).includes(v)) return v as Kind;
  throw new UsageError(`kind must be one of ${KINDS.join(', ')}`);
}

/** `alice.jpg`, or for faces `alice/2.jpg`: a name the kind's folder takes. */
export function checkDropName(kind: Kind, name: string): void {
  const parts = name.split('/');
  const bad = parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.') || p.includes('\\') || hasControlChar(p));
  // A speaker's spoken text (LABEL.txt) goes beside LABEL.wav, before it.
  const companion = kind === 'speakers' && parts.length === 1 && name.toLowerCase().endsWith('.txt');
  const bytes = Buffer.byteLength(name);
  if (!bad && bytes > DROP_NAME_MAX_BYTES) {
    throw new UsageError(`"${name}" is ${bytes} bytes long; the ${kind} folder takes names of at most ${DROP_NAME_MAX_BYTES} bytes through the console: rename the file shorter`);
  }
  if (bad || (!companion && !classify(`${kind}/${name}`))) {
    const takes = kind === 'faces' ? 'NAME.jpg/.jpeg/.png/.bmp/.webp (or NAME/FILE.jpg)' : kind === 'knowledge' ? 'ID.txt or ID.md' : kind === 'speakers' ? 'LABEL.txt (the spoken text, first) and LABEL.wav' : 'NAME.wav or NAME.pcm';
    throw new UsageError(`"${name}" is not a file name the ${kind} folder takes: it takes ${takes}, no leading dot, no folders beyond one for faces`);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Puts `tmp` at `dest` unless something is there already: link() fails with EEXIST, rename() would replace. */
async function placeNoClobber(tmp: string, dest: string, shown: string): Promise<void> {
  try {
    await link(tmp, dest);
    await unlink(tmp);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new BusyError(`${shown} is already there, waiting to be enrolled: wait until it moved to done/ or failed/, or choose another name`);
    // vfat and some network file systems have no hard links: check, then rename.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK' && code !== 'EXDEV') throw err;
  }
  if (await exists(dest)) throw new BusyError(`${shown} is already there, waiting to be enrolled: choose another name`);
  await rename(tmp, dest);
}

export async function dropUpload(layout: Layout, kind: Kind, name: string, body: Readable, maxBytes: number): Promise<{ kind: Kind; name: string; size: number }> {
  checkDropName(kind, name);
  // Written inside its folder held open, no link on the way followed (confined-dirs.ts).
  const at = splitRel(`${kind}/${name}`);
  return createConfinedDirs(layout.root, () => false).with(at.dir, true, (folder) => dropInto(folder.path, at.base, kind, name, body, maxBytes));
}

async function dropInto(dir: string, base: string, kind: Kind, name: string, body: Readable, maxBytes: number): Promise<{ kind: Kind; name: string; size: number }> {
  const dest = `${dir}/${base}`;
  if (await exists(dest)) throw new BusyError(`${kind}/${name} is already waiting to be enrolled: wait until it moved to done/ or failed/, or choose another name`);
  const tmp = join(dir, `${UPLOAD_PREFIX}${randomBytes(6).toString('hex')}.part`);
  let size = 0;
  const fh = await open(tmp, 'wx', 0o644);
  try {
    try {
      // A request cut off mid-body ends this loop with an error: the temp file is removed below.
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) throw new TooLargeError(`the file is larger than enroll.max_file_size (${maxBytes} bytes)`);
        await fh.write(chunk as Buffer);
      }
      if (size === 0) throw new InvalidInputError('the upload is empty');
      await fh.sync();
    } finally {
      await fh.close();
    }
    await placeNoClobber(tmp, dest, `${kind}/${name}`);
    await fsyncDir(dir);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return { kind, name, size };
}

/** Removes uploads cut short by a crash (only this process writes them, under the instance lock). */
export async function sweepUploads(layout: Layout): Promise<number> {
  let removed = 0;
  for (const kind of KINDS) {
    const dirs = [layout.inbox(kind)];
    if (kind === 'faces') {
      try {
        for (const e of await readdir(layout.inbox(kind), { withFileTypes: true })) if (e.isDirectory() && !e.name.startsWith('.')) dirs.push(join(layout.inbox(kind), e.name));
      } catch {
        continue;
      }
    }
    for (const d of dirs) {
      let names: string[];
      try {
        names = await readdir(d);
      } catch {
        continue;
      }
      for (const n of names) {
        if (n.startsWith(UPLOAD_PREFIX)) {
          await rm(join(d, n), { force: true });
          removed += 1;
        }
      }
    }
  }
  return removed;
}

/**
 * Moves failed/<kind>/NAME back into <kind>/ under the name it was first dropped with (the outbox
 * knows it; failed/ may hold `alice.2.jpg` for a second alice.jpg) and removes its error file.
 */
export async function retryFailed(layout: Layout, db: Db, kind: Kind, name: string): Promise<{ kind: Kind; name: string }> {
  if (kind === 'knowledge') {
    throw new UsageError('knowledge files stay in knowledge/ and are sent again when they change: edit and save the file to retry it');
  }
  const parts = name.split('/');
  if (parts.length > 2 || parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.')) || name.endsWith('.json')) {
    throw new UsageError(`"${name}" is not a file in failed/${kind}/`);
  }
  const dirs = createConfinedDirs(layout.root, () => false);
  const src = splitRel(`failed/${kind}/${name}`);
  const fromDir = await dirs.open(src.dir).catch(() => undefined);
  if (!fromDir) throw new NoSuchFileError(`failed/${kind}/${name} does not exist (already retried or removed)`);
  try {
    return await retryFrom(layout, db, dirs, fromDir, src.base, kind, name);
  } finally {
    await dirs.close(fromDir).catch(() => undefined);
  }
}

/** retryFailed inside the folders held open (confined-dirs.ts): failed/<kind>[/PERSON] and the inbox it goes back to. */
async function retryFrom(layout: Layout, db: Db, dirs: ConfinedDirs, fromDir: DirRef, base: string, kind: Kind, name: string): Promise<{ kind: Kind; name: string }> {
  const from = `${fromDir.path}/${base}`;
  if (!(await exists(from))) throw new NoSuchFileError(`failed/${kind}/${name} does not exist (already retried or removed)`);
  const row = db.prepare(`SELECT source_path FROM outbox WHERE kind = ? AND final_path = ? AND state = 'failed' ORDER BY id DESC LIMIT 1`).get(kind, name) as { source_path: string } | undefined;
  const original = row ? row.source_path.slice(kind.length + 1) : name;
  checkDropName(kind, original);
  const at = splitRel(`${kind}/${original}`);
  return dirs.with(at.dir, true, async (destDir) => {
    const dest = `${destDir.path}/${at.base}`;
    const tmp = `${destDir.path}/${UPLOAD_PREFIX}${randomBytes(6).toString('hex')}.part`;
    // Through a hidden name: the watcher must not see the file before its text companion is back.
    await rename(from, tmp);
    try {
      if (kind === 'speakers') {
        const txt = `${fromDir.path}/${splitRel(companionRel(name)).base}`;
        const orig = splitInner(original);
        if (await exists(txt)) await rename(txt, `${destDir.path}/${orig.stem}.txt`);
      }
      await placeNoClobber(tmp, dest, `${kind}/${original}`);
    } catch (err) {
      await rename(tmp, from).catch(() => undefined);
      throw err;
    }
    // The name result-files.ts gives it: a long one is cut to fit NAME_MAX.
    await rm(`${fromDir.path}/${basename(resultPathFor(layout, kind, 'failed', name))}`, { force: true });
    await fsyncDir(destDir.path);
    return { kind, name: original };
  });
}
