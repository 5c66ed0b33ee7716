import { createHash } from 'node:crypto';
import { readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir, tempSuffix, writeFileAtomic, writeTempFile } from '../util/fs-atomic.js';
import { makeDir } from '../util/make-dir.js';
import type { FaceRow } from './face-store.js';
import type { IndexEntry } from './types.js';

// The files a face-recognition program reads: `faces/<face_id>.<ext>` and `faces/index.json`.
// Ordering rules that keep a reader safe: an image is renamed into place before any index names
// it, and an image is deleted only after the index that named it has been replaced.

export const INDEX_FILE = 'index.json';
/**
 * Beside index.json (which stays a bare JSON array by contract): the index's version, written
 * atomically right after each index.json. The version is the first 16 hex digits of the sha256 of
 * index.json's bytes, so a reader can check that the index it read is the one announced (by this
 * file or by a `faces.synced` event) and compare two versions for equality; it says nothing about
 * order. The same index always has the same version, across restarts too.
 */
export const INDEX_VERSION_FILE = 'index.version';

export function indexVersion(indexText: string): string {
  return createHash('sha256').update(indexText).digest('hex').slice(0, 16);
}

const FACE_ID = /^[0-9a-fA-F]{32}$/;

/** face_id values become file names: anything but 32 hex characters is refused (spec-notes.md). */
export function isValidFaceId(faceId: string): boolean {
  return FACE_ID.test(faceId);
}

/**
 * A temp name for a face image download, `.<face_id>.img.<8 hex>.tmp` (the shape of fs-atomic's
 * tempPathFor), for a download (image-download.ts, opened with 'wx': a clash is refused and
 * retried) and for one moved back into the staging folder (staging.ts unpublish). Math.random, not
 * crypto: the name needs no secrecy.
 */
export function downloadTempName(faceId: string): string {
  return `.${faceId}.img.${tempSuffix()}.tmp`;
}

export function imageFileName(faceId: string, ext: string): string {
  return `${faceId}.${ext}`;
}

/** A row's record in index.json (rows without an image file are not listed). */
function indexEntry(r: FaceRow): IndexEntry {
  return { face_id: r.face_id, group_id: r.group_id, id: r.id ?? 0, name: r.name, image: r.image_file! };
}

/** An index.json and its index.version written to temp names and fsynced, waiting for the commit that names their rows. */
export interface PreparedIndex {
  tmp: string;
  versionTmp: string;
  version: string;
}

export function createCacheFiles(folder: string) {
  const dir = join(folder, '.');
  // Each row's line of index.json, kept while the row object lives: the face store replaces a
  // changed row's object and never changes one it gave out (face-store.ts), so a pass for a few
  // faces (every pass of an enrollment burst) renders their lines only, not the whole group's again.
  const lines = new WeakMap<FaceRow, string>();
  const render = (rows: readonly FaceRow[]): string => {
    const out: string[] = [];
    for (const r of rows) {
      if (r.image_file === null) continue;
      let line = lines.get(r);
      if (line === undefined) {
        line = JSON.stringify(indexEntry(r));
        lines.set(r, line);
      }
      out.push(line);
    }
    // One record per line: diffable by an operator, still one JSON array for programs. The
    // brackets go into the first and last lines, so that the join makes the whole text flat: added
    // around it, they would make a rope that the version's hash copies again.
    if (out.length === 0) return '[]\n';
    out[0] = `[\n${out[0]!}`;
    out[out.length - 1] = `${out[out.length - 1]!}\n]\n`;
    return out.join(',\n');
  };
  const indexPath = join(dir, INDEX_FILE);
  const versionPath = join(dir, INDEX_VERSION_FILE);

  // index.json and index.version are written and fsynced side by side, then renamed in that order
  // and the folder fsynced once: two flushes on the way, not four one after the other (on an SD
  // card each is tens of ms, and an enrollment burst's seed passes wait for them). A crash between
  // the renames leaves a new index.json beside the old version, as one between the two atomic
  // writes did; a reader tells them apart by the version, and the start-up rewrites both.
  async function prepare(text: string, flag: 'w' | 'wx'): Promise<PreparedIndex> {
    const version = indexVersion(text);
    await makeDir(dir);
    const [index, ver] = await Promise.allSettled([writeTempFile(indexPath, text, flag), writeTempFile(versionPath, `${version}\n`, flag)]);
    if (index.status === 'fulfilled' && ver.status === 'fulfilled') return { tmp: index.value, versionTmp: ver.value, version };
    await Promise.all([index, ver].map((r) => (r.status === 'fulfilled' ? rm(r.value, { force: true }) : undefined)));
    throw index.status === 'rejected' ? index.reason : (ver as PromiseRejectedResult).reason;
  }

  async function publish(prepared: PreparedIndex): Promise<string> {
    try {
      await rename(prepared.tmp, indexPath);
      await rename(prepared.versionTmp, versionPath);
    } catch (err) {
      await Promise.all([rm(prepared.tmp, { force: true }), rm(prepared.versionTmp, { force: true })]);
      throw err;
    }
    await fsyncDir(dir);
    return prepared.version;
  }

  async function write(text: string): Promise<string> {
    return publish(await prepare(text, 'w'));
  }

  return {
    dir,
    indexPath,
    /** A plain file name in the folder; not path.join, called for every image of a sync. */
    pathOf(file: string): string {
      return `${dir}/${file}`;
    },
    versionPath,
    /**
     * The index of `rows` and its version, written beside index.json under temp names (dot names
     * the start-up removes if the agent dies before the commit), fsynced: while a pass's images
     * are made durable, so that after the commit they are only renamed into place (publishIndex).
     */
    prepareIndex(rows: readonly FaceRow[]): Promise<PreparedIndex> {
      return prepare(render(rows), 'wx');
    },
    /** Renames a prepared index and its version into place, durably; returns the version. */
    publishIndex: publish,
    async discardIndex(prepared: PreparedIndex): Promise<void> {
      await Promise.all([rm(prepared.tmp, { force: true }), rm(prepared.versionTmp, { force: true })]);
    },
    /** Rewrites index.json (and index.version) only when they differ from what the rows say (start-up repair). */
    async ensureIndex(rows: readonly FaceRow[]): Promise<{ rewritten: boolean; version: string }> {
      const wanted = render(rows);
      const version = indexVersion(wanted);
      const current = await readFile(indexPath, 'utf8').catch(() => undefined);
      if (current === wanted) {
        const v = await readFile(versionPath, 'utf8').catch(() => undefined);
        if (v?.trim() !== version) await writeFileAtomic(versionPath, `${version}\n`);
        return { rewritten: false, version };
      }
      await write(wanted);
      return { rewritten: true, version };
    },
    /** face_ids of rows whose image file is missing on disk (someone deleted it, or a crash). */
    async missingImages(rows: readonly FaceRow[]): Promise<string[]> {
      const present = new Set(await readdir(dir).catch(() => [] as string[]));
      return rows.filter((r) => r.image_file !== null && !present.has(r.image_file)).map((r) => r.face_id);
    },
    /**
     * Removes temp files left by a crash and image files that no row names (an interrupted
     * commit). Call only after the index has been made to match the rows.
     */
    async removeStrays(rows: readonly FaceRow[]): Promise<number> {
      const named = new Set(rows.map((r) => r.image_file).filter((f): f is string => f !== null));
      let removed = 0;
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (name === INDEX_FILE || name === INDEX_VERSION_FILE) continue;
        const stray = name.startsWith('.') ? name.endsWith('.tmp') : !named.has(name) && /^[0-9a-fA-F]{32}\.[a-z]+$/.test(name);
        if (!stray) continue;
        await rm(join(dir, name), { force: true });
        removed++;
      }
      return removed;
    },
    async removeFiles(files: Iterable<string>): Promise<void> {
      for (const f of files) await rm(join(dir, f), { force: true });
    },
    async removeTemps(tmps: Iterable<string>): Promise<void> {
      for (const t of tmps) await rm(t, { force: true });
    },
    async exists(file: string): Promise<boolean> {
      return stat(join(dir, file)).then(() => true, () => false);
    },
  };
}

export type CacheFiles = ReturnType<typeof createCacheFiles>;
