import { formatDuration, formatSize } from '../util/units.js';

// The text of the live areas: plain functions of what the daemon reported, so tests can check them
// without a terminal.

const BAR = 24;

/** `[██████░░░░]` for a share from 0 to 1. */
export function bar(share: number, width = BAR): string {
  const n = Math.max(0, Math.min(width, Math.round(share * width)));
  return `[${'█'.repeat(n)}${'░'.repeat(width - n)}]`;
}

export interface SyncProgressView {
  phase: 'listing' | 'downloading' | 'committing';
  faces: number | null;
  images_done: number;
  images_total: number;
  bytes: number;
}

/** `face sync: 12/40 images [███░░] 1.2MB at 340.0KB/s` */
export function syncProgressLine(p: SyncProgressView, elapsedMs: number): string {
  if (p.phase === 'listing') return 'face sync: listing the group...';
  const rate = elapsedMs > 0 ? (p.bytes * 1000) / elapsedMs : 0;
  const images = p.images_total === 0 ? 'no images to fetch' : `${p.images_done}/${p.images_total} images ${bar(p.images_done / p.images_total)} ${formatSize(p.bytes)} at ${formatSize(Math.round(rate))}/s`;
  const faces = p.faces === null ? '' : ` (${p.faces} faces listed)`;
  return p.phase === 'committing' ? `face sync: ${images}${faces}; saving` : `face sync: ${images}${faces}`;
}

export interface LevelView {
  remaining_ms: number;
  rms_dbfs: number | null;
  peak_dbfs: number | null;
  hint: 'closer' | 'louder' | 'too_loud' | null;
}

const HINTS: Record<string, string> = {
  closer: 'move closer to the microphone',
  louder: 'speak a little louder',
  too_loud: 'too loud: step back or speak softer',
};

/** The meter runs from -60 dBFS (empty) to 0 dBFS (full). */
export function levelLines(name: string, l: LevelView, hint: LevelView['hint']): string {
  const rms = l.rms_dbfs ?? -Infinity;
  const share = Number.isFinite(rms) ? (rms + 60) / 60 : 0;
  const level = Number.isFinite(rms) ? `${Math.round(rms)} dBFS` : 'silence';
  return `recording ${JSON.stringify(name)}: ${(l.remaining_ms / 1000).toFixed(1)} s left\n`
    + `level ${bar(share)} ${level}${hint ? `  ${HINTS[hint]}` : hint === null ? '  good' : ''}`;
}

/**
 * The hint shown: one that held for most of the last half second, so that the pauses between
 * words do not make "move closer" flicker.
 */
export function steadyHint(recent: ReadonlyArray<LevelView['hint']>): LevelView['hint'] {
  const last = recent.slice(-5);
  const counts = new Map<LevelView['hint'], number>();
  for (const h of last) counts.set(h, (counts.get(h) ?? 0) + 1);
  let best: LevelView['hint'] = null;
  let n = 0;
  for (const [h, c] of counts) if (c > n) [best, n] = [h, c];
  return n >= 3 ? best : null;
}

export function trainingLine(speakerId: string, model: string, state: string, elapsedMs: number): string {
  return `speaker ${speakerId} (${model}): ${state}, ${formatDuration(elapsedMs)} elapsed`;
}
