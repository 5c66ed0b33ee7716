// The two things the agent takes from node:perf_hooks' `performance`, without loading it: that
// module and the nine of Node's own it brings (user timing, observers, histograms) stay resident
// in a daemon for good, about 0.25 MB, for a clock that process.hrtime gives as well.

const originNs = process.hrtime.bigint();

export const performance = {
  /** Milliseconds since this module loaded, monotonic (for durations, as performance.now()). */
  now(): number {
    return Number(process.hrtime.bigint() - originNs) / 1e6;
  },
  /** The wall-clock time (ms since the epoch) at which now() was 0. */
  timeOrigin: Date.now(),
};
