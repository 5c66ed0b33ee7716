import { readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { makeDir } from '../util/make-dir.js';

// Gallery tiles: a small WebP per face, made once from the cached image and kept on disk under
// <state_dir>/console/thumbs/, named by face id and image hash so that a changed image gets a new
// tile and an unchanged one is never decoded again. sharp (libvips) decodes off the event loop, in
// one libuv thread, one image at a time; it is imported only when a tile is first missing. Images
// it cannot decode (BMP) get a marker file and are served as they are.

export const THUMB_SIZE = 256;
const MAX_INPUT_PIXELS = 40_000_000;

export interface ThumbSource {
  faceId: string;
  /** The cached image's sha256 (changes when the image changes). */
  sha256: string;
  path: string;
}

export type ThumbResult = { kind: 'thumb'; path: string; type: 'image/webp' } | { kind: 'original'; path: string };

export interface ThumbStats {
  made: number;
  cache_hits: number;
  undecodable: number;
  queued: number;
}

type Sharp = typeof import('sharp');

export function createThumbnails(opts: { dir: string; logger: Logger; size?: number }) {
  const { dir, logger } = opts;
  const size = opts.size ?? THUMB_SIZE;
  const stats: ThumbStats = { made: 0, cache_hits: 0, undecodable: 0, queued: 0 };
  const pending = new Map<string, Promise<ThumbResult>>();
  let chain: Promise<unknown> = Promise.resolve();
  let sharpModule: Promise<Sharp | undefined> | undefined;
  let dirReady: Promise<unknown> | undefined;

  function loadSharp() {
    sharpModule ??= import('sharp').then(
      (m) => {
        const sharp = ((m as unknown as { default?: Sharp }).default ?? m) as Sharp;
        // One decoding thread and no libvips operation cache: the daemon's memory stays flat.
        sharp.concurrency(1);
        sharp.cache(false);
        return sharp;
      },
      (err: unknown) => {
        logger.warn({ err: (err as Error).message }, 'sharp (libvips) cannot be loaded on this machine: the gallery shows the full images instead of thumbnails');
        return undefined;
      },
    );
    return sharpModule;
  }

  const keyOf = (s: ThumbSource) => `${s.faceId}-${s.sha256.slice(0, 16)}`;

  async function exists(p: string): Promise<boolean> {
    try {
      await stat(p);
      return true;
    } catch {
      return false;
    }
  }

  async function make(s: ThumbSource, key: string): Promise<ThumbResult> {
    const out = join(dir, `${key}.webp`);
    const marker = join(dir, `${key}.original`);
    if (await exists(out)) {
      stats.cache_hits += 1;
      return { kind: 'thumb', path: out, type: 'image/webp' };
    }
    if (await exists(marker)) return { kind: 'original', path: s.path };
    const sharp = await loadSharp();
    if (!sharp) return { kind: 'original', path: s.path };
    dirReady ??= makeDir(dir);
    await dirReady;
    const tmp = join(dir, `.${key}.${process.pid}.tmp`);
    try {
      const buf = await sharp(s.path, { limitInputPixels: MAX_INPUT_PIXELS, sequentialRead: true })
        .rotate()
        .resize(size, size, { fit: 'cover', withoutEnlargement: true })
        .webp({ quality: 72, effort: 2 })
        .toBuffer();
      await writeFile(tmp, buf);
      await rename(tmp, out);
      stats.made += 1;
      return { kind: 'thumb', path: out, type: 'image/webp' };
    } catch (err) {
      await rm(tmp, { force: true });
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw err;
      stats.undecodable += 1;
      logger.info({ face_id: s.faceId, err: (err as Error).message }, 'no thumbnail for this image format; the gallery shows the image itself');
      await writeFile(marker, '').catch(() => undefined);
      return { kind: 'original', path: s.path };
    }
  }

  return {
    stats: () => ({ ...stats }),
    /** The tile for this face: made at most once, one decode at a time across the daemon. */
    get(s: ThumbSource): Promise<ThumbResult> {
      const key = keyOf(s);
      const running = pending.get(key);
      if (running) return running;
      stats.queued += 1;
      const p = chain.then(() => make(s, key)).finally(() => {
        stats.queued -= 1;
        pending.delete(key);
      });
      chain = p.catch(() => undefined);
      pending.set(key, p);
      return p;
    },
    /** Removes tiles of faces no longer cached or whose image changed. */
    async prune(live: ThumbSource[]): Promise<number> {
      const keep = new Set(live.map(keyOf));
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        return 0;
      }
      let removed = 0;
      for (const n of names) {
        const key = n.replace(/\.(webp|original)$/, '');
        if (key === n || keep.has(key)) continue;
        await rm(join(dir, n), { force: true });
        removed += 1;
      }
      return removed;
    },
  };
}

export type Thumbnails = ReturnType<typeof createThumbnails>;
