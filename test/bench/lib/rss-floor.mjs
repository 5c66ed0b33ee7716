// The floor of a saw: the soak's RSS at its cycles' ends climbs as V8's old space fills with
// garbage and drops at each full GC, a tooth every few cycles. A leak lifts the
// bottoms of the teeth, so those are what a quarter's floor is made of.
//
// The lower quartile of a quarter's cycle ends (the floor until r48) depends on how many teeth fall
// in the quarter, not only on their bottoms: in a 20-minute soak (10 cycles a quarter, a tooth
// every 6) the second quarter held two bottoms and the last one, and a run whose bottoms were
// 51.6, 51.9, 47.3, 51.8 and 51.6 MB read 1.064x.
import { median } from './daemon-run.mjs';

/** The lower quartile (with 4 values or fewer, the lowest). */
export function lowerQuartile(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 4)];
}

/**
 * The indexes of a series' tooth bottoms: a value lower than the one before it and no higher than
 * the one after it (the last value counts when it is lower than the one before it).
 */
export function bottoms(series) {
  const out = [];
  for (let i = 1; i < series.length; i++) {
    if (series[i] < series[i - 1] && (i === series.length - 1 || series[i] <= series[i + 1])) out.push(i);
  }
  return out;
}

/**
 * The floor of `series[from..to)`: the median of the tooth bottoms in it, looked for in the whole
 * series (a bottom's neighbours may be in the next quarter). The median, not the lowest: one end
 * caught just after memory was handed back (82.5 MB among 96.9 to 126.9) would otherwise set it. A
 * stretch with no bottom (no full GC in it) falls back to its lower quartile.
 */
export function floorOf(series, from, to) {
  const inside = bottoms(series).filter((i) => i >= from && i < to).map((i) => series[i]);
  return inside.length > 0 ? median(inside) : lowerQuartile(series.slice(from, to));
}
