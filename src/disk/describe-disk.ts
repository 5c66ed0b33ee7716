import type { DiskReading } from './disk-floor.js';
import { formatSize } from '../util/units.js';

// Apart from disk-floor.ts, whose statfs calls load node:fs/promises: `status` prints this line
// and must not pay for that.

/** For status and doctor: one line about the floor. */
export function describeDisk(r: DiskReading): string {
  const head = `${formatSize(r.free_bytes)} free of ${formatSize(r.total_bytes)} on ${r.dir}, floor ${formatSize(r.min_free_bytes)} (state_min_free)`;
  return r.nearly_full ? `DISK NEARLY FULL: ${head}; face images, TTS audio and voiceprint copies are not cached until space is freed` : head;
}
