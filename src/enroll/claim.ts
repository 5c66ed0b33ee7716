import { randomUUID } from 'node:crypto';
import type { Stats } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { HardLinkedFileError, NotRegularFileError, fileTypeOf } from '../util/safe-open.js';
import { join } from 'node:path';
import { EnrollPathError, splitRel, type ConfinedDirs, type DirRef } from './confined-dirs.js';
import type { Commit } from './commit-batcher.js';
import { isStoreRefusal } from './store-refusal.js';
import { formatSize } from '../util/units.js';
import { copyAndHash, hardLinkRefusal, readAndStage, readSmallFile, type StagedRead } from './claim-copy.js';
import type { DirSync } from './dir-sync.js';
import type { EnrollFs } from './enroll-fs.js';
import type { Candidate, Layout } from './layout.js';
import { speakerTextRel } from './layout.js';
import type { OutboxStore } from './outbox-store.js';
import type { EnrollmentConfig, RowMeta } from './types.js';
import { stagedInMemory } from './staged-body.js';
import type { ClaimedBytes } from './claimed-bytes.js';
import { EnrollInputError, checkImage, checkImageHead, checkPcmLength, checkVoiceprintName, checkWav, decodeText } from './validators.js';
import { wavHeader } from '../audio/wav.js';
import type { FaceCheckStep } from './face-check-step.js';
import { canonicalName, nameProblem } from '../client/names.js';

// Taking a stable file into the outbox: refuse what can be refused unread, copy it under state_dir
// (hashing on the way) so the upload reads bytes nothing else writes, check the copy, then record
// the row in one transaction. A crash before the commit leaves only an orphan copy (removed at
// start) and the original in place, so the file is simply taken again.

export type ClaimResult =
  | { outcome: 'queued'; rowId: number; /** The row's name (as sent) */ name: string }
  | { outcome: 'failed' | 'duplicate'; rowId: number }
  | { outcome: 'ignored' | 'unchanged' }
  | { outcome: 'retry' };

export interface ClaimDeps {
  layout: Layout;
  store: OutboxStore;
  commit: Commit;
  config: EnrollmentConfig;
  place(row: { kind: Candidate['kind']; source_path: string }, failed: boolean): string | null;
  /** A place from `place` that was not recorded: free it again. */
  unplace(row: { kind: Candidate['kind'] }, rel: string, failed: boolean): void;
  /** Folder fsync shared between concurrent claims. */
  syncDir: DirSync;
  /** Where a small face image's bytes wait for its upload (claimed-bytes.ts). */
  claimed?: ClaimedBytes;
  /** Where the look at the file, its staging link and the look after are made (enroll-fs.ts). */
  fs: Pick<EnrollFs, 'lstat' | 'stat' | 'link'>;
  /** Where each file is looked at and read: its folder, held open (confined-dirs.ts). */
  dirs: Pick<ConfinedDirs, 'open' | 'close'>;
  /** The face check (face-check-step.ts); absent when enroll.face_check.mode is off. */
  faceCheck?: FaceCheckStep;
}

const NAME_OF: Record<Candidate['kind'], string> = { faces: 'face name', voiceprints: 'voiceprint name', speakers: 'speaker label', knowledge: 'knowledge ID' };

/** Raw .pcm voiceprints: 16-bit little-endian, mono (the config names no channel count). */
const PCM_CHANNELS = 1;

export function createClaimer(deps: ClaimDeps) {
  const { layout, store, commit, config } = deps;
  const settleMs = config.enroll.settle_time;
  /** Speakers whose .txt was missing: when we first noticed. */
  const missingText = new Map<string, number>(); // performance.now() when first missed
  /** LABEL.txt files whose mtime is ahead of the clock: when first seen so (performance.now()), and as what. */
  const textAhead = new Map<string, { size: number; mtimeMs: number; since: number }>();
  /**
   * A speaker's text file is taken once unchanged for settle_time. By its mtime, unless that is
   * ahead of the clock (a terminal that booted without a clock and has no NTP yet, a copy that
   * kept its times from a machine whose clock runs ahead): then from when it was first seen so,
   * or it would wait until the clock caught up, days maybe.
   */
  function textSettled(rel: string, txt: Stats): boolean {
    const age = Date.now() - txt.mtimeMs;
    if (age >= settleMs) {
      textAhead.delete(rel);
      return true;
    }
    if (age >= 0) return false;
    const seen = textAhead.get(rel);
    if (!seen || seen.size !== txt.size || seen.mtimeMs !== txt.mtimeMs) {
      textAhead.set(rel, { size: txt.size, mtimeMs: txt.mtimeMs, since: performance.now() });
      return false;
    }
    if (performance.now() - seen.since < settleMs) return false;
    textAhead.delete(rel);
    return true;
  }

  /**
   * `commit(fn)`, where `fn` may choose the place of the original in done/ or failed/ (`place()`):
   * freed again when agent.db refused the transaction (rolled back), or the claim made again at
   * the next rescan would find its own reservation and take `NAME.2`. Not after a failed WAL sync:
   * the row may hold the place.
   */
  async function commitPlacing<T>(c: Candidate, failed: boolean, durable: boolean, fn: (place: () => string | null) => T): Promise<T> {
    let placed = null as string | null;
    try {
      return await commit(() => fn(() => (placed = deps.place({ kind: c.kind, source_path: c.rel }, failed))), { durable });
    } catch (err) {
      if (placed !== null && isStoreRefusal(err)) deps.unplace(c, placed, failed);
      throw err;
    }
  }

  /** The name sent to the service and kept in the outbox (client/names.ts): NFC, except knowledge IDs, which name files. */
  const nameOf = (c: Candidate) => (c.kind === 'knowledge' ? c.name : canonicalName(c.name));

  async function refuse(c: Candidate, size: number, mtimeMs: number, err: EnrollInputError, meta: RowMeta = {}): Promise<ClaimResult> {
    if (c.kind === 'knowledge') {
      // Refused once per version: a rescan finds the same refusal in the mirror and says nothing.
      const m = store.mirrorGet(c.name);
      if (m && m.file === c.rel && m.size === size && m.mtime_ms === mtimeMs && m.content_sha256 === '') return { outcome: 'unchanged' };
    }
    const rowId = await commitPlacing(c, true, true, (place) => {
      if (c.kind === 'knowledge') {
        // Refused once per version: the mirror remembers it until the file is edited.
        store.mirrorPut({ id: c.name, file: c.rel, size, mtime_ms: mtimeMs, content_sha256: '', uploaded: 0 });
      } else if (store.isActiveSource(c.rel)) {
        return undefined;
      }
      return store.insert({
        kind: c.kind, name: nameOf(c), source_path: c.rel, source_size: size, source_mtime_ms: mtimeMs, staged_path: null,
        content_sha256: '', size, meta, state: 'failed', last_error: err.message, last_error_code: err.code, final_path: place(),
      });
    });
    return rowId === undefined ? { outcome: 'ignored' } : { outcome: 'failed', rowId };
  }

  /**
   * `look`: an lstat of the file made a moment ago (the stability tracker's), by its name. What is
   * taken is looked at again inside its folder, held open without following a link on the way
   * (confined-dirs.ts); a file that is not the one the tracker saw settle waits for another.
   */
  return async function claim(c: Candidate, look?: Stats): Promise<ClaimResult> {
    const { dir: dirRel, base } = splitRel(c.rel);
    let dir: DirRef;
    try {
      dir = await deps.dirs.open(dirRel);
    } catch (err) {
      if (!(err instanceof EnrollPathError)) return { outcome: 'ignored' };
      // Nothing of what lies behind the link is looked at, not even its size.
      return refuse(c, 0, 0, new EnrollInputError('TA_ERR_SYMLINK', `${c.rel} was not taken: ${err.message}`));
    }
    try {
      return await claimIn(c, dir, base, look);
    } finally {
      await deps.dirs.close(dir).catch(() => undefined);
    }
  };

  async function claimIn(c: Candidate, dir: DirRef, base: string, look: Stats | undefined): Promise<ClaimResult> {
    // A file on its way already is not looked up here: the watcher offers only files with no
    // unfinished row (enrollment.ts), and the commit below refuses one that got one meanwhile
    // (none of a burst's 1,000 claims did; the read was one of the few outside a transaction).
    const abs = `${dir.path}/${base}`;
    const name = nameOf(c);
    let st;
    try {
      st = await deps.fs.lstat(abs);
    } catch {
      return { outcome: 'ignored' };
    }
    if (look && (look.ino !== st.ino || look.size !== st.size || look.mtimeMs !== st.mtimeMs)) return { outcome: 'retry' };
    const shown = c.rel;
    const badName = nameProblem(c.name, NAME_OF[c.kind]);
    if (badName) return refuse(c, st.size, Math.floor(st.mtimeMs), new EnrollInputError('TA_ERR_BAD_NAME', `${badName} (rename the file${c.kind === 'faces' && c.inner.includes('/') ? ' or its folder' : ''})`));
    if (st.isSymbolicLink()) {
      // Never followed, wherever it points: what it names may change between a look and a read.
      return refuse(c, st.size, Math.floor(st.mtimeMs), new EnrollInputError('TA_ERR_SYMLINK', `${shown} is a symbolic link; the agent follows no link in enroll.dir: copy the file itself into the folder (the link was moved here untouched)`));
    }
    if (!st.isFile()) {
      // A FIFO, socket, device node or folder where a file belongs: never opened, moved to
      // failed/ (a rename, which is safe for all of them) with the reason beside it.
      return refuse(c, st.size, Math.floor(st.mtimeMs), new EnrollInputError('TA_ERR_NOT_A_FILE', `${shown} is ${fileTypeOf(st)}, not a regular file; only files are taken from the enrollment folders (it was moved here untouched)`));
    }
    if (st.nlink > 1) return refuse(c, st.size, Math.floor(st.mtimeMs), hardLinkRefusal(shown, st.nlink));
    const size = st.size;
    const mtimeMs = Math.floor(st.mtimeMs);
    const max = config.enroll.max_file_size;
    if (size === 0) return refuse(c, size, mtimeMs, new EnrollInputError('TA_ERR_EMPTY_FILE', `${shown} is empty (0 bytes)`));
    if (size > max) {
      return refuse(c, size, mtimeMs, new EnrollInputError('TA_ERR_TOO_LARGE', `${shown} is ${formatSize(size)}, over enroll.max_file_size (${formatSize(max)}); it was moved here untouched`));
    }
    // The inode lets the result step tell this file from one put in its place later (results.ts).
    const meta: RowMeta = { sourceIno: st.ino };
    if (c.kind === 'knowledge') {
      const m = store.mirrorGet(c.name);
      if (m && m.file === c.rel && m.size === size && m.mtime_ms === mtimeMs) return { outcome: 'unchanged' };
      // ID.md wins over ID.txt: two files for one entry would upload in turn forever.
      if (c.ext === '.txt' && (await deps.fs.lstat(`${dir.path}/${c.name}.md`).catch(() => undefined))) return { outcome: 'ignored' };
    }
    try {
      if (c.kind === 'voiceprints') checkVoiceprintName(name);
      if (c.kind === 'voiceprints' && c.ext === '.pcm') checkPcmLength(size, PCM_CHANNELS, shown);
      if (c.kind === 'speakers') {
        const txtRel = speakerTextRel(c);
        // Beside the recording, in the same folder held open.
        const txtIn = `${dir.path}/${splitRel(txtRel).base}`;
        const txt = await deps.fs.lstat(txtIn).catch(() => undefined);
        if (!txt) {
          const first = missingText.get(c.rel) ?? performance.now();
          missingText.set(c.rel, first);
          if (performance.now() - first < settleMs) return { outcome: 'retry' };
          missingText.delete(c.rel);
          throw new EnrollInputError('TA_ERR_SPEAKER_TEXT_MISSING', `${shown} has no ${txtRel} beside it holding the spoken text; drop both files again`);
        }
        missingText.delete(c.rel);
        if (!textSettled(c.rel, txt)) return { outcome: 'retry' };
        // The text file travels with the recording to done/ or failed/.
        meta.companion = txtRel;
        if (!txt.isFile()) throw new EnrollInputError('TA_ERR_NOT_A_FILE', `${txtRel} is ${fileTypeOf(txt)}, not a text file; put the spoken text in a plain file and drop both files again`);
        meta.text = decodeText(await readSmallFile(txtIn, txtRel), txtRel).trim();
      }
    } catch (err) {
      if (err instanceof EnrollInputError) return refuse(c, size, mtimeMs, err, meta);
      throw err;
    }

    const pcm = c.kind === 'voiceprints' && c.ext === '.pcm';
    const staged = join(layout.staging, `${randomUUID()}${pcm ? '.wav' : c.ext}`);
    let copied: (Pick<StagedRead, 'sha256' | 'bytes'> & Partial<StagedRead>) | undefined;
    try {
      // A small face image: read once, staged by a link or from memory, without fsync (staged-body.ts says why).
      copied = stagedInMemory(c.kind, size)
        ? await readAndStage(abs, st.ino, staged, size, true, deps.fs)
        : await copyAndHash(abs, st.ino, staged, size, pcm ? wavHeader({ sampleRate: config.voiceprint.sample_rate, channels: PCM_CHANNELS, bitsPerSample: 16 }, size) : undefined);
    } catch (err) {
      // Replaced by something that is not a file since the lstat: look again after a quiet period.
      if (err instanceof NotRegularFileError) copied = undefined;
      else if (err instanceof HardLinkedFileError) return refuse(c, size, mtimeMs, hardLinkRefusal(shown, err.links), meta);
      else throw err;
    }
    const { sha256, bytes, head, linked } = copied ?? { sha256: '', bytes: -1, head: undefined, linked: false };
    // The same inode, size and mtime after the copy: what was copied is what lies there (a file
    // replaced by rename with the same size and mtime is caught by the inode). A staged link read
    // on the event loop brings its own look (the same inode); one replaced after the link is
    // told apart at the result step, as any replaced later (results.ts, sameFile).
    const after = copied?.after ?? await deps.fs.lstat(abs).catch(() => undefined);
    if (bytes !== size || !after || after.ino !== st.ino || after.size !== size || Math.floor(after.mtimeMs) !== mtimeMs) {
      // Still being written after all: wait for another quiet period.
      await rm(staged, { force: true });
      return { outcome: 'retry' };
    }
    try {
      if (c.kind === 'faces') meta.contentType = head ? checkImageHead(head, shown) : await checkImage(staged, shown);
      if (c.kind === 'faces' && deps.faceCheck) {
        const checked = await deps.faceCheck(head ?? await readFile(staged), shown);
        meta.faceCheck = checked.record;
        if (checked.refusal) throw new EnrollInputError(checked.refusal.code, checked.refusal.message);
      }
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
    if (!head) await deps.syncDir(layout.staging);

    const result = await commitPlacing(c, false, false, (place): ClaimResult => {
      const row = { kind: c.kind, name, source_path: c.rel, source_size: size, source_mtime_ms: mtimeMs, content_sha256: sha256, size, meta };
      if (c.kind === 'knowledge') {
        const m = store.mirrorGet(c.name);
        store.mirrorPut({ id: c.name, file: c.rel, size, mtime_ms: mtimeMs, content_sha256: sha256, uploaded: 0 });
        if (m && m.content_sha256 === sha256) return { outcome: 'unchanged' };
        return { outcome: 'queued', name, rowId: store.insert({ ...row, staged_path: staged, action: 'upload', state: 'queued' }) };
      }
      if (store.isActiveSource(c.rel)) return { outcome: 'ignored' };
      const earlier = store.doneByContent(c.kind, name, sha256);
      if (earlier) {
        // Dropped again: the service has it already; the earlier answer is the answer.
        return { outcome: 'duplicate', rowId: store.insert({ ...row, meta: { ...meta, duplicateOf: earlier.id }, staged_path: null, action: earlier.action, state: 'done', result_json: earlier.result_json, final_path: place() }) };
      }
      // The same content is on its way under another file: take this one once that is done.
      if (store.isActiveContent(c.kind, name, sha256)) return { outcome: 'ignored' };
      return { outcome: 'queued', name, rowId: store.insert({ ...row, staged_path: staged, state: 'queued' }) };
    });
    // A duplicate finishes the file at once: on disk before its original moves (commit-batcher.ts).
    // Asked for after the commit, which is not durable itself: whether the content was sent before
    // is known only inside it, and a read ahead of it cost every file a read of its own.
    if (result.outcome === 'duplicate') await commit(() => undefined, { durable: true });
    if (result.outcome !== 'queued') await rm(staged, { force: true });
    // `after` is the staged link's inode too when linked: what the upload compares against.
    else if (head && c.kind === 'faces') deps.claimed?.keep(result.rowId, staged, head, linked ? after : undefined);
    return result;
  }
}
