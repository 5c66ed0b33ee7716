import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, open, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { Commit } from './commit-batcher.js';
import { formatSize } from '../util/units.js';
import type { DirSync } from './dir-sync.js';
import type { Candidate, Layout } from './layout.js';
import { speakerTextRel } from './layout.js';
import type { OutboxStore } from './outbox-store.js';
import type { EnrollmentConfig, RowMeta } from './types.js';
import { readAtMost, sha256Of, stagedInMemory } from './staged-body.js';
import { EnrollInputError, checkImage, checkImageHead, checkPcmLength, checkVoiceprintName, checkWav, decodeText } from './validators.js';
import { wavHeader } from '../audio/wav.js';

// Taking a stable file into the outbox: refuse what can be refused unread, copy it under state_dir
// (hashing on the way) so the upload reads bytes nothing else writes, check the copy, then record
// the row in one transaction. A crash before the commit leaves only an orphan copy (removed at
// start) and the original in place, so the file is simply taken again.

export type ClaimResult =
  | { outcome: 'queued' | 'failed' | 'duplicate'; rowId: number }
  | { outcome: 'ignored' | 'unchanged' }
  | { outcome: 'retry' };

export interface ClaimDeps {
  layout: Layout;
  store: OutboxStore;
  commit: Commit;
  config: EnrollmentConfig;
  place(row: { kind: Candidate['kind']; source_path: string }, failed: boolean): string | null;
  /** Folder fsync shared between concurrent claims. */
  syncDir: DirSync;
}

/** Raw .pcm voiceprints: 16-bit little-endian, mono (the config names no channel count). */
const PCM_CHANNELS = 1;

/** Files up to this size are read in one go (a stream costs a round trip per 64 KB and more JS). */
const WHOLE_READ_MAX = 1024 * 1024;

async function copyAndHash(src: string, dest: string, size: number, prefix?: Buffer): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const out = await open(dest, 'wx', 0o600);
  try {
    if (prefix) await out.write(prefix);
    const chunks: AsyncIterable<unknown> | unknown[] = size <= WHOLE_READ_MAX ? [await readAtMost(src, size + 1)] : createReadStream(src);
    for await (const chunk of chunks) {
      const buf = chunk as Buffer;
      hash.update(buf);
      bytes += buf.length;
      await out.write(buf);
    }
    await out.sync();
  } finally {
    await out.close();
  }
  return { sha256: hash.digest('hex'), bytes };
}

export function createClaimer(deps: ClaimDeps) {
  const { layout, store, commit, config } = deps;
  const settleMs = config.enroll.settle_time;
  /** Speakers whose .txt was missing: when we first noticed. */
  const missingText = new Map<string, number>();

  async function refuse(c: Candidate, size: number, mtimeMs: number, err: EnrollInputError, meta: RowMeta = {}): Promise<ClaimResult> {
    const rowId = await commit(() => {
      if (c.kind === 'knowledge') {
        // Refused once per version: the mirror remembers it until the file is edited.
        store.mirrorPut({ id: c.name, file: c.rel, size, mtime_ms: mtimeMs, content_sha256: '', uploaded: 0 });
      } else if (store.isActiveSource(c.rel)) {
        return undefined;
      }
      const final_path = deps.place({ kind: c.kind, source_path: c.rel }, true);
      return store.insert({
        kind: c.kind, name: c.name, source_path: c.rel, source_size: size, source_mtime_ms: mtimeMs, staged_path: null,
        content_sha256: '', size, meta, state: 'failed', last_error: err.message, last_error_code: err.code, final_path,
      });
    }, { durable: true });
    return rowId === undefined ? { outcome: 'ignored' } : { outcome: 'failed', rowId };
  }

  return async function claim(c: Candidate): Promise<ClaimResult> {
    if (c.kind !== 'knowledge' && store.isActiveSource(c.rel)) return { outcome: 'ignored' };
    const abs = layout.abs(c.rel);
    let st;
    try {
      st = await lstat(abs);
    } catch {
      return { outcome: 'ignored' };
    }
    const shown = c.rel;
    if (st.isSymbolicLink()) {
      const target = await realpath(abs).catch(() => undefined);
      const inbox = await realpath(layout.inbox(c.kind));
      const mtime = Math.floor(st.mtimeMs);
      if (!target) return refuse(c, st.size, mtime, new EnrollInputError('TA_ERR_SYMLINK', `${shown} is a symbolic link to a file that does not exist`));
      if (!target.startsWith(inbox + sep)) {
        return refuse(c, st.size, mtime, new EnrollInputError('TA_ERR_SYMLINK_OUTSIDE', `${shown} is a symbolic link to ${target}, outside ${layout.inbox(c.kind)}; copy the file itself into the folder`));
      }
      st = await stat(abs);
    }
    if (!st.isFile()) return { outcome: 'ignored' };
    const size = st.size;
    const mtimeMs = Math.floor(st.mtimeMs);
    const max = config.enroll.max_file_size;
    if (size === 0) return refuse(c, size, mtimeMs, new EnrollInputError('TA_ERR_EMPTY_FILE', `${shown} is empty (0 bytes)`));
    if (size > max) {
      return refuse(c, size, mtimeMs, new EnrollInputError('TA_ERR_TOO_LARGE', `${shown} is ${formatSize(size)}, over enroll.max_file_size (${formatSize(max)}); it was moved here untouched`));
    }
    const meta: RowMeta = {};
    if (c.kind === 'knowledge') {
      const m = store.mirrorGet(c.name);
      if (m && m.file === c.rel && m.size === size && m.mtime_ms === mtimeMs) return { outcome: 'unchanged' };
      // ID.md wins over ID.txt: two files for one entry would upload in turn forever.
      if (c.ext === '.txt' && (await stat(layout.abs(`knowledge/${c.name}.md`)).catch(() => undefined))) return { outcome: 'ignored' };
    }
    try {
      if (c.kind === 'voiceprints') checkVoiceprintName(c.name);
      if (c.kind === 'voiceprints' && c.ext === '.pcm') checkPcmLength(size, PCM_CHANNELS, shown);
      if (c.kind === 'speakers') {
        const txtRel = speakerTextRel(c);
        const txt = await stat(layout.abs(txtRel)).catch(() => undefined);
        if (!txt) {
          const first = missingText.get(c.rel) ?? Date.now();
          missingText.set(c.rel, first);
          if (Date.now() - first < settleMs) return { outcome: 'retry' };
          missingText.delete(c.rel);
          throw new EnrollInputError('TA_ERR_SPEAKER_TEXT_MISSING', `${shown} has no ${txtRel} beside it holding the spoken text; drop both files again`);
        }
        missingText.delete(c.rel);
        if (Date.now() - txt.mtimeMs < settleMs) return { outcome: 'retry' };
        // The text file travels with the recording to done/ or failed/.
        meta.companion = txtRel;
        meta.text = decodeText(await readFile(layout.abs(txtRel)), txtRel).trim();
      }
    } catch (err) {
      if (err instanceof EnrollInputError) return refuse(c, size, mtimeMs, err, meta);
      throw err;
    }

    const pcm = c.kind === 'voiceprints' && c.ext === '.pcm';
    const staged = join(layout.staging, `${randomUUID()}${pcm ? '.wav' : c.ext}`);
    // A small face image: read once, staged from memory without fsync (staged-body.ts says why).
    const inMemory = stagedInMemory(c.kind, size);
    let head: Buffer | undefined;
    let sha256: string;
    let bytes: number;
    if (inMemory) {
      head = await readAtMost(abs, size + 1);
      bytes = head.length;
      sha256 = sha256Of(head);
      if (bytes === size) await writeFile(staged, head, { flag: 'wx', mode: 0o600 });
    } else {
      ({ sha256, bytes } = await copyAndHash(abs, staged, size, pcm ? wavHeader({ sampleRate: config.voiceprint.sample_rate, channels: PCM_CHANNELS, bitsPerSample: 16 }, size) : undefined));
    }
    const after = await stat(abs).catch(() => undefined);
    if (bytes !== size || !after || after.size !== size || Math.floor(after.mtimeMs) !== mtimeMs) {
      // Still being written after all: wait for another quiet period.
      await rm(staged, { force: true });
      return { outcome: 'retry' };
    }
    try {
      if (c.kind === 'faces') meta.contentType = head ? checkImageHead(head, shown) : await checkImage(staged, shown);
      if (c.kind === 'voiceprints' || c.kind === 'speakers') {
        const wav = await checkWav(staged, shown);
        meta.sampleRate = wav.sampleRate;
        meta.channels = wav.channels;
      }
      if (c.kind === 'knowledge') decodeText(await readFile(staged), shown);
    } catch (err) {
      await rm(staged, { force: true });
      if (err instanceof EnrollInputError) return refuse(c, size, mtimeMs, err, meta);
      throw err;
    }
    if (!inMemory) await deps.syncDir(layout.staging);

    // Durable only when it finishes the file at once (a duplicate): see commit-batcher.ts.
    const finishesNow = c.kind !== 'knowledge' && store.doneByContent(c.kind, c.name, sha256) !== undefined;
    const result = await commit((): ClaimResult => {
      const row = { kind: c.kind, name: c.name, source_path: c.rel, source_size: size, source_mtime_ms: mtimeMs, content_sha256: sha256, size, meta };
      if (c.kind === 'knowledge') {
        const m = store.mirrorGet(c.name);
        store.mirrorPut({ id: c.name, file: c.rel, size, mtime_ms: mtimeMs, content_sha256: sha256, uploaded: 0 });
        if (m && m.content_sha256 === sha256) return { outcome: 'unchanged' };
        return { outcome: 'queued', rowId: store.insert({ ...row, staged_path: staged, action: 'upload', state: 'queued' }) };
      }
      if (store.isActiveSource(c.rel)) return { outcome: 'ignored' };
      const earlier = store.doneByContent(c.kind, c.name, sha256);
      if (earlier) {
        // Dropped again: the service has it already; the earlier answer is the answer.
        return { outcome: 'duplicate', rowId: store.insert({ ...row, meta: { ...meta, duplicateOf: earlier.id }, staged_path: null, action: earlier.action, state: 'done', result_json: earlier.result_json, final_path: deps.place({ kind: c.kind, source_path: c.rel }, false) }) };
      }
      // The same content is on its way under another file: take this one once that is done.
      if (store.isActiveContent(c.kind, c.name, sha256)) return { outcome: 'ignored' };
      return { outcome: 'queued', rowId: store.insert({ ...row, staged_path: staged, state: 'queued' }) };
    }, { durable: finishesNow });
    if (result.outcome !== 'queued') await rm(staged, { force: true });
    return result;
  };
}
