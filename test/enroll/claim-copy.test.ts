import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyAndHash, readAndStage, readSmallFile } from '../../src/enroll/claim-copy.js';
import { tmpDir } from '../helpers/tmp.js';
import { enrollFsFor, jpeg } from './fixtures.js';

// How a claim reads the file it takes, on real files: what is staged under state_dir is what was
// hashed, a name that came to hold another file is not taken, and a speaker's text is never read
// from something that is not a small regular file.

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function dirs() {
  const root = tmpDir('ta-claim-copy-');
  return { src: (name: string) => join(root, name), staged: (name: string) => join(root, `staged-${name}`) };
}

/** A new face image `name`, staged (by a link when `canLink`); its bytes, its stat and what readAndStage said. */
async function stageNew(name: string, canLink: boolean, onLoop: boolean) {
  const d = dirs();
  const bytes = jpeg();
  writeFileSync(d.src(name), bytes);
  const st = statSync(d.src(name));
  const got = await readAndStage(d.src(name), st.ino, d.staged(name), st.size, canLink, await enrollFsFor(onLoop));
  return { d, bytes, st, got };
}

// The link made in place and through the thread pool (enroll-fs.ts): the same behaviour.
describe.each([['in place', true], ['through the thread pool', false]] as const)('readAndStage (small face images), the link made %s', (_, onLoop) => {
  it('stages by a hard link when it may: the staged name is the original inode, the hash is of its bytes', async () => {
    const { d, bytes, st, got } = await stageNew('a.jpg', true, onLoop);
    expect(got).toMatchObject({ sha256: sha(bytes), bytes: bytes.length, linked: true });
    expect(got!.head.equals(bytes)).toBe(true);
    expect(statSync(d.staged('a.jpg')).ino).toBe(st.ino);
    // Its look after the read, taken on the staged link: the claim compares it with the lstat
    // instead of looking at the original again.
    expect(got!.after).toMatchObject({ ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });
  });

  it('without a link, writes the bytes it read into a new file of its own (mode 600)', async () => {
    const { d, bytes, st, got } = await stageNew('b.jpg', false, onLoop);
    expect(got).toMatchObject({ sha256: sha(bytes), linked: false });
    const staged = statSync(d.staged('b.jpg'));
    expect(staged.ino).not.toBe(st.ino);
    expect(staged.mode & 0o777).toBe(0o600);
    expect(readFileSync(d.staged('b.jpg')).equals(bytes)).toBe(true);
    expect(got!.after).toBeUndefined(); // the claim looks at the original again
  });

  it('takes nothing when the name now holds another file than the one looked at, staged by a link or not', async () => {
    for (const canLink of [true, false]) {
      const d = dirs();
      writeFileSync(d.src('c.jpg'), jpeg());
      const first = statSync(d.src('c.jpg'));
      // Replaced by rename, as an editor or a copy tool does.
      writeFileSync(d.src('c.new'), jpeg());
      renameSync(d.src('c.new'), d.src('c.jpg'));
      expect(await readAndStage(d.src('c.jpg'), first.ino, d.staged('c.jpg'), first.size, canLink, await enrollFsFor(onLoop))).toBeUndefined();
    }
  });
});

describe('copyAndHash (everything else)', () => {
  it('copies with a prefix (a raw PCM file given its WAV header); the hash and the count are of the original\'s bytes, which the claim compares with the file', async () => {
    const d = dirs();
    const pcm = Buffer.alloc(3200, 7);
    const header = Buffer.from('RIFF-header-of-44-bytes-stands-in-here-00000');
    writeFileSync(d.src('v.pcm'), pcm);
    const st = statSync(d.src('v.pcm'));
    const got = await copyAndHash(d.src('v.pcm'), st.ino, d.staged('v.wav'), st.size, header);
    const written = readFileSync(d.staged('v.wav'));
    expect(written.equals(Buffer.concat([header, pcm]))).toBe(true);
    expect(got).toEqual({ sha256: sha(pcm), bytes: pcm.length });
  });
});

describe('readSmallFile (a speaker text)', () => {
  it('refuses a FIFO without blocking on it, and a file too large to be one recording\'s text', async () => {
    const d = dirs();
    execFileSync('mkfifo', [d.src('fifo.txt')]);
    await expect(readSmallFile(d.src('fifo.txt'), 'speakers/x.txt')).rejects.toMatchObject({ code: 'TA_ERR_NOT_A_FILE', message: 'speakers/x.txt is a FIFO (named pipe), not a text file' });
    writeFileSync(d.src('big.txt'), Buffer.alloc(65 * 1024, 0x61));
    await expect(readSmallFile(d.src('big.txt'), 'speakers/big.txt')).rejects.toMatchObject({ code: 'TA_ERR_TOO_LARGE', message: expect.stringMatching(/^speakers\/big\.txt is 65(\.0)? ?KB?i?B?; the spoken text of one recording is at most 64/) });
    writeFileSync(d.src('ok.txt'), 'hello there');
    expect((await readSmallFile(d.src('ok.txt'), 'speakers/ok.txt')).toString()).toBe('hello there');
  });
});
