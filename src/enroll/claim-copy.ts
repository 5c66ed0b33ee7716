import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstatSync } from 'node:fs';
import { open, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { HardLinkedFileError, NotRegularFileError, openRegularFile } from '../util/safe-open.js';
import { SYNC_READ_MAX, readRegularFileSync } from '../util/state-fs.js';
import { formatSize } from '../util/units.js';
import type { EnrollFs } from './enroll-fs.js';
import { sha256Of } from './staged-body.js';
import { EnrollInputError } from './validators.js';

// How a claim reads the file it takes (claim.ts): a small face image read once and staged by a
// hard link or from memory, anything else copied under state_dir while it is hashed, and a
// speaker's text read without ever blocking. None of these follows a symbolic link or reads a
// file that is not regular or has a second name (safe-open.ts); the claim names the file inside
// its folder held open (confined-dirs.ts), so no folder on the way is followed either.

/** What an operator must not make the agent read: a file with a second name (hard link). */
export function hardLinkRefusal(shown: string, links: number): EnrollInputError {
  return new EnrollInputError('TA_ERR_HARD_LINK', `${shown} has ${links} names (hard links); the agent takes only files with one name, so that a link cannot pass off another file as dropped here: copy the file itself into the folder`);
}

/** The spoken text of one recording (LABEL.txt); anything larger is the wrong file. */
const SPEAKER_TEXT_MAX = 64 * 1024;

/** Files up to this size are read in one go (a stream costs a round trip per 64 KB and more JS). */
const WHOLE_READ_MAX = 1024 * 1024;

/**
 * At most `max` bytes (one more than expected shows that the file grew: the caller retries). With
 * `expected`, a read that stops exactly there ends it: a regular file's read comes up short only
 * at its end, and growth after it shows in the caller's look at the file afterwards (one
 * thread-pool trip less than reading on until a read returns nothing).
 */
async function readAtMost(fh: FileHandle, max: number, expected?: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(max);
  let n = 0;
  for (;;) {
    const { bytesRead } = await fh.read(buf, n, max - n, n);
    if (bytesRead === 0) break;
    n += bytesRead;
    if (n === max || n === expected) break;
  }
  return buf.subarray(0, n);
}

/**
 * Copies the file that lstat saw (`ino`) to `dest`, hashing it; undefined when the name now holds
 * another file (replaced meanwhile: the caller waits and looks again). Opened without blocking,
 * and only if regular (safe-open.ts).
 */
export async function copyAndHash(src: string, ino: number, dest: string, size: number, prefix?: Buffer): Promise<{ sha256: string; bytes: number } | undefined> {
  const { fh: input, st } = await openRegularFile(src, { noFollow: true, oneName: true });
  try {
    if (st.ino !== ino) return undefined;
    return await copyFrom(input, dest, size, prefix);
  } finally {
    await input.close();
  }
}

export interface StagedRead {
  sha256: string;
  bytes: number;
  head: Buffer;
  linked: boolean;
  /**
   * The staged link's fstat after the read, when it was read on the event loop: the original's
   * inode as it is now (size and mtime show a write during the read), so the claim needs no
   * second look at the original through the thread pool.
   */
  after?: Stats;
}

/**
 * A small face image, staged by a hard link to the original when one can be made (same file
 * system, not a symbolic link, allowed by fs.protected_hardlinks), else written from memory without
 * fsync (staged-body.ts says why); read once either way, through the staged name when linked, so
 * that what is hashed is what the staged name holds. Undefined when the name now holds another
 * file, as for copyAndHash. A link writes no byte and allocates no inode, and removing it later
 * frees none: in a burst, inode allocation (ext4 skipping recently deleted inodes) was a sixth of
 * the agent's CPU. An operator who rewrites the original in place rewrites the staged bytes too:
 * the upload checks them against the hash taken here and refuses what changed (staged-body.ts).
 * The link is made where `fs` makes calls on enroll.dir (enroll-fs.ts).
 */
export async function readAndStage(src: string, ino: number, dest: string, size: number, canLink: boolean, fs: Pick<EnrollFs, 'link'>): Promise<StagedRead | undefined> {
  const linked = canLink && (await fs.link(src, dest).then(() => true, () => false));
  if (linked) {
    // link(2) takes the name as it is, a symbolic link or a file with other names too: the staged
    // name (in staging, which only the daemon writes) is looked at before a byte is read.
    const st = lstatSync(dest);
    if (!st.isFile() || st.ino !== ino || st.nlink !== 2) {
      await rm(dest, { force: true });
      if (st.isFile() && st.ino === ino) throw new HardLinkedFileError(src, st.nlink - 1);
      return undefined;
    }
  }
  let head: Buffer;
  let after: Stats | undefined;
  if (linked && size < SYNC_READ_MAX) {
    // The link is in staging, under state_dir: read on the event loop (util/state-fs.ts says why).
    const read = readRegularFileSync(dest, size + 1, size);
    if (read.st.ino !== ino) return undefined;
    head = read.bytes;
    after = read.after;
  } else {
    const { fh, st } = await openRegularFile(linked ? dest : src, { noFollow: true, oneName: !linked });
    try {
      if (st.ino !== ino) return undefined;
      head = await readAtMost(fh, size + 1, size);
    } finally {
      await fh.close();
    }
  }
  if (!linked && head.length === size) await writeFile(dest, head, { flag: 'wx', mode: 0o600 });
  return { sha256: sha256Of(head), bytes: head.length, head, linked, ...(after ? { after } : {}) };
}

async function copyFrom(input: FileHandle, dest: string, size: number, prefix?: Buffer): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const out = await open(dest, 'wx', 0o600);
  try {
    if (prefix) await out.write(prefix);
    const chunks: AsyncIterable<unknown> | unknown[] = size <= WHOLE_READ_MAX ? [await readAtMost(input, size + 1)] : input.createReadStream({ start: 0, autoClose: false });
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

/** A speaker's text: never blocks (a FIFO swapped in after the stat), and never huge. */
export async function readSmallFile(path: string, shown: string): Promise<Buffer> {
  let opened;
  try {
    opened = await openRegularFile(path, { noFollow: true, oneName: true });
  } catch (err) {
    if (err instanceof NotRegularFileError) throw new EnrollInputError('TA_ERR_NOT_A_FILE', `${shown} is ${err.what}, not a text file`);
    if (err instanceof HardLinkedFileError) throw hardLinkRefusal(shown, err.links);
    throw err;
  }
  try {
    if (opened.st.size > SPEAKER_TEXT_MAX) throw new EnrollInputError('TA_ERR_TOO_LARGE', `${shown} is ${formatSize(opened.st.size)}; the spoken text of one recording is at most ${formatSize(SPEAKER_TEXT_MAX)}`);
    return await readAtMost(opened.fh, SPEAKER_TEXT_MAX);
  } finally {
    await opened.fh.close();
  }
}
