import { PerformanceObserver, constants } from 'node:perf_hooks';
import type { Logger } from '../log/logger.js';
import { loadMallocTrim, type MallocTrim } from '../util/malloc-trim.js';
import { performance } from '../util/monotonic.js';

// After a burst of work the daemon's RSS stayed where the burst had taken it: each enrolled image
// is a 30 KB buffer that V8 frees only at a full GC, seconds later, and glibc keeps the freed space
// between live chunks of its heap, resident. A 1,000-file burst left a daemon at 74 MB that had
// idled at 60 before it, for good; malloc_trim(0) took it to 58 (docs/performance-history.md, r22).
//
// So a trim follows the full GCs: each one (re)arms a timer, and when no other has come for
// QUIET_MS (or MAX_WAIT_MS have passed since the first), the free pages go back to the kernel.
// An idle daemon runs no GC and no trim; a burst's full GCs end in one trim after its last, which
// is the one V8 runs to shrink its heap once the work has stopped. A trim costs 0.2 to 3 ms of the
// event loop (the heaps' free chunks walked, an madvise each).
//
// Node's own binary is the larger part of an idle daemon's RSS: 37 of 54 MB, of which start-up
// read most once (its built-in modules' sources, its snapshot) and an idle daemon touches about
// 11 MB again. So a trim also unmaps those pages (the addon's releaseNodePages: they stay in the
// page cache, and what is touched later faults back in from there), once SETTLE_MS after start
// and then at most every NODE_PAGES_EVERY_MS: each time the working set faults back in, about a
// millisecond of minor faults, which a trim after every burst would pay for little.

export const QUIET_MS = 1_000;
export const MAX_WAIT_MS = 30_000;
/** The first trim, and release of node's start-up pages, after start-up's own work. */
export const SETTLE_MS = 15_000;
export const NODE_PAGES_EVERY_MS = 60_000;

export interface HeapTrimmerDeps {
  trimmer: MallocTrim;
  logger: Logger;
  /** Called after each trim with the resident bytes it gave back (0 when RSS did not drop). */
  onTrim?: (releasedBytes: number) => void;
  /** Called after each release of node's pages with the resident bytes it gave back. */
  onNodePages?: (releasedBytes: number) => void;
  quietMs?: number;
  maxWaitMs?: number;
  settleMs?: number;
  nodePagesEveryMs?: number;
}

export function createHeapTrimmer(deps: HeapTrimmerDeps) {
  const quietMs = deps.quietMs ?? QUIET_MS;
  const maxWaitMs = deps.maxWaitMs ?? MAX_WAIT_MS;
  const settleMs = deps.settleMs ?? SETTLE_MS;
  const nodePagesEveryMs = deps.nodePagesEveryMs ?? NODE_PAGES_EVERY_MS;
  let timer: NodeJS.Timeout | undefined;
  let settle: NodeJS.Timeout | undefined;
  let firstAt = 0;
  let releasedAt: number | undefined;
  let observer: PerformanceObserver | undefined;

  function trimNow(releaseAnyway = false): void {
    timer = undefined;
    const before = process.memoryUsage.rss();
    const t0 = performance.now();
    const released = deps.trimmer.trim();
    const after = process.memoryUsage.rss();
    deps.onTrim?.(Math.max(0, before - after));
    deps.logger.debug({ released, rss_before_mb: mb(before), rss_after_mb: mb(after), ms: round1(performance.now() - t0) }, 'free heap pages handed back to the kernel after a full GC');
    const now = performance.now();
    if (releaseAnyway || releasedAt === undefined || now - releasedAt >= nodePagesEveryMs) releaseNodePages(now);
  }

  function releaseNodePages(now: number): void {
    releasedAt = now;
    const before = process.memoryUsage.rss();
    const advised = deps.trimmer.releaseNodePages();
    const after = process.memoryUsage.rss();
    deps.onNodePages?.(Math.max(0, before - after));
    deps.logger.debug({ advised_mb: mb(Math.max(0, advised)), rss_before_mb: mb(before), rss_after_mb: mb(after), ms: round1(performance.now() - now) }, "node's own pages unmapped (they stay in the page cache)");
  }

  function afterFullGc(): void {
    const now = performance.now();
    if (timer === undefined) firstAt = now;
    else clearTimeout(timer);
    const wait = Math.max(0, Math.min(quietMs, firstAt + maxWaitMs - now));
    timer = setTimeout(() => trimNow(), wait);
    // The daemon's own work keeps it running; a pending trim does not.
    timer.unref();
  }

  return {
    start(): void {
      if (observer) return;
      observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          if (((e as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) afterFullGc();
        }
      });
      observer.observe({ entryTypes: ['gc'] });
      settle = setTimeout(() => {
        settle = undefined;
        if (timer !== undefined) clearTimeout(timer);
        trimNow(true);
      }, settleMs);
      settle.unref();
    },
    stop(): void {
      observer?.disconnect();
      observer = undefined;
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (settle) clearTimeout(settle);
      settle = undefined;
    },
  };
}

/**
 * The daemon's trimmer, started, or undefined when the addon is not there (logged: a package without
 * it was built wrong; on another C library than glibc there is nothing to trim).
 */
export function startHeapTrimming(logger: Logger, counters: Pick<HeapTrimmerDeps, 'onTrim' | 'onNodePages'> = {}): ReturnType<typeof createHeapTrimmer> | undefined {
  const loaded = loadMallocTrim();
  if ('missing' in loaded) {
    logger.warn({ reason: loaded.missing }, 'free heap pages are not handed back to the kernel after bursts of work (RSS stays at its high-water mark)');
    return undefined;
  }
  const trimmer = createHeapTrimmer({ trimmer: loaded.trim, logger, ...counters });
  trimmer.start();
  return trimmer;
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function mb(bytes: number): number {
  return Math.round(bytes / 104_857.6) / 10;
}
