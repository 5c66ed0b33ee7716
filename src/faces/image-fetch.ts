import { rename, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { imageFileName } from './cache-files.js';
import type { Logger } from 'pino';
import { downloadImage, type DownloadContext, type ImageJob, type ImageOutcome } from './image-download.js';
import type { StagedImage, Staging } from './staging.js';

// One image job of a sync pass: from a download kept by an earlier, failed pass when it is still
// good, else from the server. Every new download is recorded in the staging table, so that it
// survives this pass failing (and a restart, after a check of its size and hash).

export interface FetchJob extends ImageJob {
  /** A download kept from a failed pass. */
  staged?: StagedImage;
  /**
   * The face has no image in the cache, so no row or index names any `faces/<face_id>.*`: its
   * download is written in `faces/` and renamed to its final name as soon as it is checked, while
   * the others download (the commit then renames nothing). Until the commit names it, it is a
   * kept download like any other (staging.ts).
   */
  publish?: boolean;
}

export interface FetchContext extends DownloadContext {
  staging: Staging;
  logger: Logger;
  nowMs: number;
  /** A kept download younger than this is used with no request; an older one is re-validated. */
  recheckMs: number;
  /** Counts kept downloads used. */
  onReuse: () => void;
  /** The cache folder (`faces/`), where jobs with `publish` write. */
  cacheDir: string;
}

export async function fetchImage(ctx: FetchContext, job: FetchJob): Promise<ImageOutcome> {
  const s = job.staged;
  if (s) {
    if (await ctx.staging.verify(s)) {
      if (ctx.nowMs - s.fetched_at < ctx.recheckMs) return useStaged(ctx, s, job.prevSha256, s.fetched_at);
      // Kept for longer than a re-check interval: ask whether it is still the server's image.
      const res = await downloadImage(ctx, { faceId: job.faceId, conditional: { etag: s.etag, lastModified: s.last_modified }, prevSha256: s.sha256 });
      if (res.kind === 'unchanged') {
        const confirmed: StagedImage = { ...s, etag: res.etag ?? s.etag, last_modified: res.lastModified ?? s.last_modified, fetched_at: ctx.nowMs };
        ctx.staging.add(confirmed);
        return useStaged(ctx, confirmed, job.prevSha256, ctx.nowMs);
      }
      await ctx.staging.discard([s]);
      return record(ctx, job, res);
    }
    ctx.logger.warn({ face_id: job.faceId, file: s.file }, 'a kept face image download does not match its record (size or sha256); it is downloaded again');
    await ctx.staging.discard([s]);
  }
  // Same folder as the final name: the rename that publishes it is the cheap, same-directory kind.
  return record(ctx, job, await downloadImage(job.publish ? { ...ctx, dir: ctx.cacheDir } : ctx, job));
}

async function useStaged(ctx: FetchContext, s: StagedImage, prevSha256: string | null | undefined, checkedAt: number): Promise<ImageOutcome> {
  ctx.onReuse();
  if (prevSha256 && s.sha256 === prevSha256) {
    await ctx.staging.discard([s]);
    return { kind: 'unchanged', etag: s.etag, lastModified: s.last_modified, checkedAt };
  }
  return { kind: 'stored', tmp: ctx.staging.pathOf(s.file), ext: s.ext, sha256: s.sha256, bytes: s.bytes, etag: s.etag, lastModified: s.last_modified, checkedAt };
}

async function record(ctx: FetchContext, job: FetchJob, res: ImageOutcome): Promise<ImageOutcome> {
  if (res.kind !== 'stored') return res;
  // downloadImage compared with the kept download's hash; the cached image may equal the new one.
  if (job.prevSha256 && res.sha256 === job.prevSha256) {
    await rm(res.tmp, { force: true });
    return { kind: 'unchanged', etag: res.etag, lastModified: res.lastModified };
  }
  let file = basename(res.tmp);
  if (job.publish) {
    // Not durable yet, and named by nothing: the syncfs before the commit covers it (durability.ts).
    file = imageFileName(job.faceId, res.ext);
    const path = `${ctx.cacheDir}/${file}`; // as cache-files.ts pathOf
    try {
      await rename(res.tmp, path);
    } catch (err) {
      await rm(res.tmp, { force: true });
      throw err;
    }
    res = { ...res, tmp: path };
  }
  ctx.staging.add({
    face_id: job.faceId, file, ext: res.ext, sha256: res.sha256, bytes: res.bytes,
    etag: res.etag, last_modified: res.lastModified, fetched_at: ctx.nowMs,
  });
  return res;
}
