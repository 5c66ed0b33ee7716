import { wait } from '../util/backoff.js';
import type { SyncReport } from './types.js';

/**
 * A refresh for faces this agent just uploaded rewrites index.json, the whole group each time: in
 * an enrollment burst into a large group, refreshes back to back would cost every enrolled file
 * far more than its upload. The next refresh waits this many times the last index write's duration (at
 * most MAX_REFRESH_GAP_MS): index writes take at most a fifth of the time, at once with a small
 * group (a millisecond or two), a few a second with a large one. Only the index write counts:
 * the rest of a pass costs the same per face however they are grouped.
 */
const REFRESH_SPACING = 4;
const MAX_REFRESH_GAP_MS = 1_000;

export interface RefreshQueueDeps {
  /** The sync running now, if any. */
  running: () => Promise<SyncReport> | undefined;
  /** Starts a refresh (or joins the one running). */
  refresh: () => Promise<SyncReport>;
  /** Shutdown: a refresh still waiting for its turn is not started. */
  signal: AbortSignal;
}

/** When enrollment's refreshes run: after the running sync, and spaced by the last index write. */
export function createRefreshQueue(deps: RefreshQueueDeps) {
  let followUp: Promise<SyncReport> | undefined;
  /** When the next refresh may start (monotonic ms). */
  let readyAt = 0;
  return {
    /**
     * The sync that will see what was just asked for: now, or one more after the running one (which
     * listed the group before this face changed) and after the last refresh's spacing. Whatever
     * starts meanwhile, the one returned starts after this call.
     */
    later(): Promise<SyncReport> {
      if (!deps.running() && !followUp && performance.now() >= readyAt) return deps.refresh();
      followUp ??= (async () => {
        // Each turn awaits something, the first included: followUp is set before it is cleared below.
        do {
          const running = deps.running();
          if (running) await running.catch(() => undefined);
          else if (!(await wait(Math.max(0, readyAt - performance.now()), deps.signal))) break;
        } while (deps.running() || performance.now() < readyAt);
        followUp = undefined;
        return deps.refresh();
      })();
      return followUp;
    },
    /** A refresh ended whose index write took `indexMs`. */
    ended(indexMs: number): void {
      readyAt = performance.now() + Math.min(MAX_REFRESH_GAP_MS, REFRESH_SPACING * indexMs);
    },
  };
}
