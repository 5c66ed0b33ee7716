import { describe, expect, it } from 'vitest';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createThumbnails } from '../../src/console/thumbnails.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { tmpDir } from '../helpers/tmp.js';

// The thumbnail cache with the real sharp/libvips: one decode per image, formats libvips cannot
// read served as they are, and tiles of faces that are gone pruned.

function bmp(w: number, h: number): Buffer {
  const row = Math.ceil((w * 3) / 4) * 4;
  const b = Buffer.alloc(54 + row * h);
  b.write('BM', 0);
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(w, 18);
  b.writeInt32LE(h, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(row * h, 34);
  b.fill(0x80, 54);
  return b;
}

describe('console thumbnails', () => {
  const logger = pino({ level: 'silent' });

  it('makes a small WebP once and reuses it; concurrent asks share one decode', async () => {
    const dir = tmpDir('ta-thumbs-');
    const src = join(dir, 'face.png');
    writeFileSync(src, faceImagePng([120, 80, 40], 800));
    const t = createThumbnails({ dir: join(dir, 'thumbs'), logger });
    const face = { faceId: 'f1', sha256: 'a'.repeat(64), path: src };
    const [a, b] = await Promise.all([t.get(face), t.get(face)]);
    expect(a).toEqual(b);
    expect(a.kind).toBe('thumb');
    expect(t.stats()).toMatchObject({ made: 1, cache_hits: 0 });
    expect((await t.get(face)).path).toBe(a.path);
    expect(t.stats()).toMatchObject({ made: 1, cache_hits: 1 });
    // A new creation of the module (a restart) finds the tile on disk.
    const again = createThumbnails({ dir: join(dir, 'thumbs'), logger });
    await again.get(face);
    expect(again.stats()).toMatchObject({ made: 0, cache_hits: 1 });
  });

  it('serves an image libvips cannot decode (BMP) as it is, and tries only once', async () => {
    const dir = tmpDir('ta-thumbs-');
    const src = join(dir, 'face.bmp');
    writeFileSync(src, bmp(8, 8));
    const t = createThumbnails({ dir: join(dir, 'thumbs'), logger });
    const face = { faceId: 'f2', sha256: 'b'.repeat(64), path: src };
    expect(await t.get(face)).toEqual({ kind: 'original', path: src });
    expect(await t.get(face)).toEqual({ kind: 'original', path: src });
    expect(t.stats()).toMatchObject({ made: 0, undecodable: 1 });
  });

  it('prunes tiles of faces no longer cached', async () => {
    const dir = tmpDir('ta-thumbs-');
    const src = join(dir, 'face.png');
    writeFileSync(src, faceImagePng([1, 2, 3], 100));
    const t = createThumbnails({ dir: join(dir, 'thumbs'), logger });
    const keep = { faceId: 'keep', sha256: 'c'.repeat(64), path: src };
    await t.get(keep);
    await t.get({ faceId: 'gone', sha256: 'd'.repeat(64), path: src });
    expect(await t.prune([keep])).toBe(1);
    expect(readdirSync(join(dir, 'thumbs'))).toEqual([`keep-${'c'.repeat(16)}.webp`]);
  });
});
