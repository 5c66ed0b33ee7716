import type { DiskFloor, Reservation } from '../disk/disk-floor.js';
import { DiskFullError } from '../errors.js';

// Disk room for the downloads of one sync pass, held from the disk floor in blocks. A reservation
// per image cost a statfs per image (with its thread-pool round trip): about a tenth of the
// daemon's CPU in a first sync of 10,000 faces (--cpu-prof). One block serves ~130 images of
// 30 KB. Near the floor, when a block no longer fits, each image asks the floor for exactly its
// own size, as before: the pool never lets a download write into the floor, and never stops one
// that the floor alone would have let through.

/** One block: 4 MiB, or the image's size when larger. */
export const ROOM_BLOCK_BYTES = 4 * 1024 * 1024;

interface Block {
  res: Reservation;
  /** Bytes of the block not handed to an image yet. */
  free: number;
  /** Images holding part of it. */
  users: number;
  /** A newer block took over: released once its last image is done. */
  retired: boolean;
}

export interface RoomPool {
  reserve(bytes: number): Promise<Reservation>;
  /** Gives back what the pass did not use (call once its downloads are over). */
  close(): void;
}

export function createRoomPool(disk: DiskFloor, what: string, blockBytes = ROOM_BLOCK_BYTES): RoomPool {
  let block: Block | undefined;
  /** A block being taken from the floor: images arriving meanwhile wait for it. */
  let refill: Promise<void> | undefined;
  /** The floor refused a block: exact reservations until the pass ends. */
  let exact = false;

  function retire(b: Block): void {
    b.retired = true;
    if (b.users === 0) b.res.release();
  }

  function take(b: Block, bytes: number): Reservation {
    b.free -= bytes;
    b.users++;
    let left = bytes;
    let done = false;
    return {
      get left() { return left; },
      wrote(n) {
        const d = Math.min(n, left);
        left -= d;
        b.res.wrote(d);
      },
      release() {
        if (done) return;
        done = true;
        // Unwritten bytes go back to the block (still held from the floor) for the next image.
        b.free += left;
        left = 0;
        b.users--;
        if (b.retired && b.users === 0) b.res.release();
      },
    };
  }

  async function reserve(bytes: number): Promise<Reservation> {
    for (;;) {
      if (exact) return disk.reserve(bytes, what);
      if (block && block.free >= bytes) return take(block, bytes);
      if (refill) {
        await refill;
        continue;
      }
      refill = (async () => {
        try {
          const res = await disk.reserve(Math.max(blockBytes, bytes), what);
          if (block) retire(block);
          block = { res, free: res.left, users: 0, retired: false };
        } catch (err) {
          if (!(err instanceof DiskFullError)) throw err;
          exact = true;
        }
      })().finally(() => {
        refill = undefined;
      });
      await refill;
    }
  }

  return {
    reserve,
    close() {
      if (block) retire(block);
      block = undefined;
    },
  };
}
