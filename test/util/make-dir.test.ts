import { describe, expect, it } from 'vitest';
import { existsSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDir, makeDirSync } from '../../src/util/make-dir.js';
import { tmpDir } from '../helpers/tmp.js';

// Node's mkdir({ recursive: true }) never returns for these paths (it spins at 100 % CPU); makeDir
// must fail them at once. /proc and a dangling symlink exist on every Linux machine and as any user.

describe.each([
  ['makeDir', (p: string, mode?: number) => makeDir(p, mode)],
  ['makeDirSync', async (p: string, mode?: number) => makeDirSync(p, mode)],
])('%s', (_name, make) => {
  it('creates missing parents top-down and returns the first folder it created, as fs.mkdir does', async () => {
    const root = tmpDir('ta-mkdir-');
    expect(await make(join(root, 'a', 'b', 'c'), 0o750)).toBe(join(root, 'a'));
    expect(statSync(join(root, 'a', 'b', 'c')).isDirectory()).toBe(true);
    expect(statSync(join(root, 'a', 'b')).mode & 0o777).toBe(0o750 & ~process.umask());
    expect(await make(join(root, 'a', 'b', 'c'))).toBeUndefined();
    expect(await make(join(root, 'a', 'b', 'd'))).toBe(join(root, 'a', 'b', 'd'));
  });

  it('fails at once under /proc and behind a dangling symlink (an unmounted stick)', async () => {
    await expect(make('/proc/ta-nowhere/deeper')).rejects.toMatchObject({ code: 'ENOENT' });
    const root = tmpDir('ta-mkdir-');
    symlinkSync(join(root, 'not-mounted'), join(root, 'usb'));
    await expect(make(join(root, 'usb', 'enroll', 'faces'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(existsSync(join(root, 'not-mounted'))).toBe(false);
  });

  it('refuses a path through a file', async () => {
    const root = tmpDir('ta-mkdir-');
    writeFileSync(join(root, 'file'), 'x');
    await expect(make(join(root, 'file', 'sub'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});

describe('makeDir with concurrent callers', () => {
  it('several callers making the same tree all succeed', async () => {
    const root = tmpDir('ta-mkdir-');
    const target = join(root, 'x', 'y', 'z');
    await Promise.all(Array.from({ length: 8 }, () => makeDir(target)));
    expect(statSync(target).isDirectory()).toBe(true);
  });
});
