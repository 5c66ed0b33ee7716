import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { commitTemp, streamToTemp, writeFileAtomic } from '../../src/util/fs-atomic.js';
import { tmpDir } from '../helpers/tmp.js';

const tmp = () => tmpDir('ta-atomic-');

describe('writeFileAtomic', () => {
  it('replaces the file and leaves no temp file behind', async () => {
    const dir = tmp();
    const path = join(dir, 'index.json');
    writeFileSync(path, 'old');
    await writeFileAtomic(path, '[1,2,3]');
    expect(readFileSync(path, 'utf8')).toBe('[1,2,3]');
    expect(readdirSync(dir)).toEqual(['index.json']);
  });

  it('creates missing folders', async () => {
    const dir = tmp();
    const path = join(dir, 'a', 'b', 'c.txt');
    await writeFileAtomic(path, 'x');
    expect(readFileSync(path, 'utf8')).toBe('x');
  });
});

describe('streamToTemp + commitTemp', () => {
  it('streams to a hidden temp file, then renames it into place', async () => {
    const dir = tmp();
    const path = join(dir, 'face.jpg');
    const { tmp: t, bytes } = await streamToTemp(path, Readable.from([Buffer.from('abc'), Buffer.from('def')]));
    expect(bytes).toBe(6);
    expect(readdirSync(dir)).not.toContain('face.jpg');
    await commitTemp(t, path);
    expect(readFileSync(path, 'utf8')).toBe('abcdef');
    expect(readdirSync(dir)).toEqual(['face.jpg']);
  });

  it('removes the temp file when the source fails half-way, or at once (before the file is even open)', async () => {
    const dir = tmp();
    const path = join(dir, 'face.jpg');
    async function* broken() {
      yield Buffer.from('abc');
      throw new Error('connection dropped');
    }
    // eslint-disable-next-line require-yield
    async function* brokenAtOnce() {
      throw new Error('connection refused');
    }
    await expect(streamToTemp(path, broken())).rejects.toThrow('connection dropped');
    expect(readdirSync(dir)).toEqual([]);
    // The stream's open races the failure: tried many times, none may leave its temp file.
    for (let i = 0; i < 50; i++) await expect(streamToTemp(path, i % 2 ? broken() : brokenAtOnce())).rejects.toThrow(/connection/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
