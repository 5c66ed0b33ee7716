import { describe, expect, it, onTestFinished } from 'vitest';
import { execFileSync } from 'node:child_process';
import { statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import { createDiskFloor } from '../../src/disk/disk-floor.js';
import { createRoomPool } from '../../src/faces/room-pool.js';

// The room a sync pass holds from the disk floor in blocks (room-pool.ts), on a real 8 MB tmpfs:
// downloads never write into the floor, and near it every image that fits still gets its room.

const MB = 1024 * 1024;
const freeBytes = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

function smallDisk(): string {
  const dir = tmpDir('ta-room-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir]);
  onTestFinished(() => {
    try {
      execFileSync('umount', ['-l', dir]);
    } catch {
      // already gone
    }
  });
  return dir;
}

/** Downloads `size`-byte files through the pool until the floor refuses one; returns how many landed. */
async function fill(dir: string, floorBytes: number, size: number, blockBytes: number): Promise<{ written: number; error: unknown }> {
  const pool = createRoomPool(createDiskFloor(dir, { bytes: floorBytes }), 'face image downloads', blockBytes);
  let written = 0;
  try {
    for (;;) {
      const room = await pool.reserve(size);
      writeFileSync(join(dir, `f${written}`), Buffer.alloc(size, 1));
      room.wrote(size);
      room.release();
      written++;
      expect(freeBytes(dir)).toBeGreaterThanOrEqual(floorBytes);
    }
  } catch (err) {
    return { written, error: err };
  } finally {
    pool.close();
  }
}

describe('room for a pass\'s downloads, held in blocks', () => {
  it('fills the disk up to the floor and no further, like one reservation per image', async () => {
    const dir = smallDisk();
    const floor = 3 * MB;
    const size = 256 * 1024;
    // What fits: the free space above the floor, in whole images.
    const fits = Math.floor((freeBytes(dir) - floor) / size);
    const { written, error } = await fill(dir, floor, size, 2 * MB);
    expect(error).toMatchObject({ code: 'TA_ERR_DISK_FULL' });
    expect(written).toBe(fits);
    expect(freeBytes(dir)).toBeGreaterThanOrEqual(floor);
  });

  it('an image larger than a block gets a room of its own size', async () => {
    const dir = smallDisk();
    const { written, error } = await fill(dir, 1 * MB, 3 * MB, 1 * MB);
    expect(error).toMatchObject({ code: 'TA_ERR_DISK_FULL' });
    expect(written).toBe(2);
  });

  it('parallel images share a block and together never pass the floor; closing gives the rest back', async () => {
    const dir = smallDisk();
    const floor = 2 * MB;
    const disk = createDiskFloor(dir, { bytes: floor });
    const pool = createRoomPool(disk, 'face image downloads', 1 * MB);
    const size = 200 * 1024;
    const rooms = await Promise.allSettled(Array.from({ length: 40 }, () => pool.reserve(size)));
    const granted = rooms.filter((r) => r.status === 'fulfilled').length;
    // 40 x 200 KB do not fit in the ~6 MB above the floor: the held room stops them, not the bytes.
    expect(granted).toBeLessThanOrEqual(Math.floor((freeBytes(dir) - floor) / size));
    expect(granted).toBeGreaterThan(20);
    for (const r of rooms) if (r.status === 'fulfilled') r.value.release();
    pool.close();
    // Nothing held any more: another writer may use all of it.
    await expect(disk.reserve(freeBytes(dir) - floor, 'another writer')).resolves.toBeDefined();
  });
});
