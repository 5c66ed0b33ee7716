import { chmodSync, lchownSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync, chownSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createConfinedDirs, folderModeFor, isContractFolder } from '../../src/enroll/confined-dirs.js';
import { needRoot, tmpDir } from '../helpers/tmp.js';

// Folders under enroll.dir reached one component at a time (confined-dirs.ts). The links here are
// made by root (the test's user, whom the agent trusts), then given to another owner with
// lchown where the case is an operator's link.

const OPERATOR = 64172;

function enrollDir(mode = 0o2770): string {
  const root = join(tmpDir('ta-confined-'), 'enroll');
  mkdirSync(root);
  chmodSync(root, mode);
  return root;
}

describe('confined folders', () => {
  it('opens nested folders, and a name under the handle names the file in that very folder even after the folder is renamed', async () => {
    const root = enrollDir();
    mkdirSync(join(root, 'faces', 'carol'), { recursive: true });
    const dirs = createConfinedDirs(root, () => true);
    const dir = await dirs.open('faces/carol');
    try {
      renameSync(join(root, 'faces', 'carol'), join(root, 'faces', 'carol-moved'));
      mkdirSync(join(root, 'faces', 'carol'));
      writeFileSync(`${dir.path}/photo.jpg`, 'x');
      expect(readFileSync(join(root, 'faces', 'carol-moved', 'photo.jpg'), 'utf8')).toBe('x');
    } finally {
      await dirs.close(dir);
    }
  });

  it.each([['on the event loop', true], ['through the thread pool', false]] as const)('a link in the path is refused with where it points (%s)', async (_, onLoop) => {
    const root = enrollDir();
    const elsewhere = tmpDir('ta-elsewhere-');
    mkdirSync(join(root, 'faces'));
    symlinkSync(elsewhere, join(root, 'faces', 'carol'));
    const dirs = createConfinedDirs(root, () => onLoop);
    await expect(dirs.open('faces/carol')).rejects.toMatchObject({ code: 'TA_ERR_ENROLL_LINK', message: `enroll.dir/faces/carol is a symbolic link (to ${elsewhere}); the agent follows no link an operator can make in enroll.dir: put the files themselves in a real folder` });
    await expect(dirs.open('faces/carol/deeper', true)).rejects.toMatchObject({ code: 'TA_ERR_ENROLL_LINK' });
  });

  it('a folder of the contract may be the administrator\'s link (done/ on a USB stick) only where operators cannot replace it', async () => {
    needRoot('give a link another owner (lchown)');
    const stick = tmpDir('ta-stick-');
    // Group-writable, no sticky bit: an operator could have made the link: refused.
    const open = enrollDir(0o2770);
    symlinkSync(stick, join(open, 'done'));
    await expect(createConfinedDirs(open, () => true).open('done')).rejects.toMatchObject({ code: 'TA_ERR_ENROLL_LINK' });
    // Sticky: only root or the agent could have made it: followed.
    const locked = enrollDir(0o3770);
    symlinkSync(stick, join(locked, 'done'));
    const dirs = createConfinedDirs(locked, () => true);
    await dirs.with('done/faces', true, async (d) => writeFileSync(`${d.path}/a.json`, '{}'));
    expect(readFileSync(join(stick, 'faces', 'a.json'), 'utf8')).toBe('{}');
    // An operator's link, even there: refused.
    const other = enrollDir(0o3770);
    symlinkSync(stick, join(other, 'failed'));
    lchownSync(join(other, 'failed'), OPERATOR, OPERATOR);
    await expect(createConfinedDirs(other, () => true).open('failed')).rejects.toMatchObject({ code: 'TA_ERR_ENROLL_LINK' });
  });

  it('a folder of the contract owned by someone else was replaced: nothing goes through it', async () => {
    needRoot('give a folder another owner');
    const root = enrollDir();
    mkdirSync(join(root, 'done', 'faces'), { recursive: true });
    chownSync(join(root, 'done', 'faces'), OPERATOR, OPERATOR);
    await expect(createConfinedDirs(root, () => false).open('done/faces/carol', true)).rejects.toMatchObject({
      code: 'TA_ERR_ENROLL_FOLDER_OWNER', message: expect.stringMatching(/^enroll\.dir\/done\/faces is owned by uid 64172, not by the agent's user/),
    });
    // A person's folder under it is the operators' to make and remove: not checked.
    mkdirSync(join(root, 'faces', 'carol'), { recursive: true });
    chownSync(join(root, 'faces', 'carol'), OPERATOR, OPERATOR);
    await createConfinedDirs(root, () => false).with('faces/carol', false, async () => undefined);
  });

  it('a file where a folder belongs is refused as not a folder', async () => {
    const root = enrollDir();
    mkdirSync(join(root, 'faces'));
    writeFileSync(join(root, 'faces', 'carol'), 'x');
    await expect(createConfinedDirs(root, () => true).open('faces/carol')).rejects.toMatchObject({ code: 'TA_ERR_ENROLL_NOT_FOLDER', message: 'enroll.dir/faces/carol is a regular file, not a folder' });
  });

  it('folders it creates: done/ and failed/ sticky, the rest as enroll.dir without the sticky bit, whatever the umask', async () => {
    const root = enrollDir(0o3770);
    const umask = process.umask(0o077);
    try {
      await createConfinedDirs(root, () => false).with('done/faces/carol', true, async () => undefined);
      await createConfinedDirs(root, () => true).with('voiceprints', true, async () => undefined);
    } finally {
      process.umask(umask);
    }
    const mode = (rel: string) => (statSync(join(root, rel)).mode & 0o7777).toString(8);
    expect([mode('done'), mode('done/faces'), mode('done/faces/carol'), mode('voiceprints')]).toEqual(['3770', '2770', '2770', '2770']);
    expect(folderModeFor('failed', 0o40755)).toBe(0o1755);
    expect(['faces', 'done', 'done/faces', 'failed/knowledge'].every(isContractFolder)).toBe(true);
    expect(['faces/carol', 'done/faces/carol', 'done/other', 'other'].some(isContractFolder)).toBe(false);
  });
});
