import { link, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClaimedBytes } from '../../src/enroll/claimed-bytes.js';

// The claim's bytes of a small face image, kept for its upload: served only while the staged copy
// is what the claim read, never for another row, within a byte budget, and aged out.

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function linkedCopy(bytes: Buffer) {
  const dir = await mkdtemp(join(tmpdir(), 'ta-claimed-'));
  dirs.push(dir);
  const original = join(dir, 'alice.jpg');
  const staged = join(dir, 'staged.jpg');
  await writeFile(original, bytes);
  await link(original, staged);
  return { original, staged, st: await stat(staged) };
}

describe('claimed bytes', () => {
  it('gives a row the bytes its claim read, once, while the linked copy is unchanged', async () => {
    const bytes = Buffer.from('the claimed image');
    const { staged, st } = await linkedCopy(bytes);
    const kept = createClaimedBytes();
    kept.keep(7, staged, bytes, st);
    expect(await kept.take(7, staged)).toBe(bytes);
    expect(await kept.take(7, staged)).toBeUndefined();
  });

  it('gives nothing once the original was rewritten in place (the hard-linked copy with it)', async () => {
    const bytes = Buffer.from('the claimed image');
    const { original, staged, st } = await linkedCopy(bytes);
    const kept = createClaimedBytes();
    kept.keep(7, staged, bytes, st);
    await writeFile(original, Buffer.from('another image, same size'.slice(0, bytes.length)));
    expect(await kept.take(7, staged)).toBeUndefined();
  });

  it('gives nothing to a row that is not the one claimed (same id, another staged copy)', async () => {
    const kept = createClaimedBytes();
    kept.keep(7, '/state/staging/a.jpg', Buffer.from('x'), undefined);
    expect(await kept.take(7, '/state/staging/b.jpg')).toBeUndefined();
  });

  it('keeps the oldest claims within its byte budget, takes more as uploads make room, and drops what ages out', async () => {
    const kept = createClaimedBytes(10, 60_000);
    kept.keep(1, 's1', Buffer.alloc(6), undefined);
    kept.keep(2, 's2', Buffer.alloc(6), undefined);
    expect(kept.size()).toBe(1);
    expect(await kept.take(1, 's1')).toBeDefined();
    kept.keep(3, 's3', Buffer.alloc(6), undefined);
    expect(await kept.take(3, 's3')).toBeDefined();
    const aging = createClaimedBytes(100, 0);
    aging.keep(1, 's1', Buffer.alloc(6), undefined);
    aging.keep(2, 's2', Buffer.alloc(6), undefined);
    expect(await aging.take(1, 's1')).toBeUndefined();
  });

  it('keeps a budget per step of the pipeline\'s depth: a deeper pipeline claims further ahead', async () => {
    let depth = 1;
    const kept = createClaimedBytes(10, 60_000, () => depth);
    kept.keep(1, 's1', Buffer.alloc(6), undefined);
    kept.keep(2, 's2', Buffer.alloc(6), undefined);
    expect(kept.size()).toBe(1);
    depth = 3; // slow syncs: 30 bytes now
    kept.keep(3, 's3', Buffer.alloc(6), undefined);
    kept.keep(4, 's4', Buffer.alloc(6), undefined);
    expect(kept.size()).toBe(3);
    for (const id of [1, 3, 4]) expect(await kept.take(id, `s${id}`)).toBeDefined();
  });
});
