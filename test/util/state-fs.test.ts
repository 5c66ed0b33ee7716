import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRegularFileSync, removeStateFile, statOrUndefined } from '../../src/util/state-fs.js';
import { NotRegularFileError } from '../../src/util/safe-open.js';
import { tmpDir } from '../helpers/tmp.js';

describe('state-fs', () => {
  it('reads at most max bytes, stops at the expected size, and returns the fstat before and after the read', () => {
    const dir = tmpDir('ta-state-fs-');
    const path = join(dir, 'a.jpg');
    writeFileSync(path, 'abcdef');
    const whole = readRegularFileSync(path, 7, 6);
    expect(whole.bytes.toString()).toBe('abcdef');
    expect(whole.st.size).toBe(6);
    expect(whole.after).toMatchObject({ ino: whole.st.ino, size: 6 });
    expect(readRegularFileSync(path, 4).bytes.toString()).toBe('abcd');
    // One byte more than expected shows that the file grew.
    writeFileSync(path, 'abcdefg');
    expect(readRegularFileSync(path, 7, 6).bytes.length).toBe(7);
  });

  it('refuses a FIFO without blocking on it', () => {
    const dir = tmpDir('ta-state-fs-');
    const fifo = join(dir, 'pipe.jpg');
    execFileSync('mkfifo', [fifo]);
    expect(() => readRegularFileSync(fifo, 10)).toThrow(NotRegularFileError);
  });

  it('removes a file, and a missing one is no error; stat says undefined when missing', () => {
    const dir = tmpDir('ta-state-fs-');
    const path = join(dir, 'b');
    writeFileSync(path, 'x');
    expect(statOrUndefined(path)?.size).toBe(1);
    removeStateFile(path);
    expect(existsSync(path)).toBe(false);
    expect(() => removeStateFile(path)).not.toThrow();
    expect(statOrUndefined(path)).toBeUndefined();
  });
});
