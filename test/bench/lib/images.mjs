// The benchmarks' face images: random bytes between a JPEG's start and end markers (the emulator
// and the agent check only those), so that no two images are alike and nothing compresses them.
import { randomBytes } from 'node:crypto';

/** A "JPEG" of exactly `bytes` bytes of random pixels. */
export function randomJpeg(bytes) {
  return Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(bytes - 6), Buffer.from([0xff, 0xd9])]);
}

/**
 * Seeds `count` faces named member-0, member-1, ... with 2 KB images (a large group the daemon
 * caches before its timed phase), 500 at a time as the emulator's store takes them.
 */
export function seedMembers(emulator, groupId, count) {
  for (let i = 0; i < count; i += 500) {
    emulator.seedFaces(groupId, Array.from({ length: Math.min(500, count - i) }, (_, j) => ({ name: `member-${i + j}`, image: randomJpeg(2048) })));
  }
}
