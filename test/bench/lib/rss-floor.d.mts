// Types of rss-floor.mjs, for its test (test/bench-lib/rss-floor.test.ts).
export function lowerQuartile(xs: readonly number[]): number;
export function bottoms(series: readonly number[]): number[];
export function floorOf(series: readonly number[], from: number, to: number): number;
