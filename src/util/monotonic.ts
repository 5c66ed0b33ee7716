// The two things the agent takes from node:perf_hooks' `performance`, without loading it: that
// module and the nine of Node's own it brings (user timing, observers, histograms) stay resident
// in a daemon for good, about 0.25 MB, for a clock that process.hrtime gives as well.
// No origin is kept: process.hrtime counts from an arbitrary fixed point (boot, on Linux), which
// serves durations the same, and the wall-clock origin is derived when asked.

export const performance = {
  /** Milliseconds on the monotonic clock (for durations, as performance.now()). */
  now(): number {
    return Number(process.hrtime.bigint()) / 1e6;
  },
  /** The wall-clock time (ms since the epoch) at which now() was 0. */
  get timeOrigin(): number {
    return Date.now() - Number(process.hrtime.bigint()) / 1e6;
  },
};
