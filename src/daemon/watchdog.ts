import type { Logger } from '../log/logger.js';
import { wait } from '../util/backoff.js';
import type { Notifier } from './sd-notify.js';

// The systemd watchdog is fed from a timer on the event loop, so a blocked loop stops the pings by
// itself. That is not enough: a loop that still turns while a component is wedged (a sync that
// never ends, an upload that never returns) must also end in a restart. So every tick runs the
// progress checks and withholds WATCHDOG=1 while one fails. A cloud outage is not a failure: the
// components keep running (and failing fast, with backoff), which is progress.

export interface ProgressCheck {
  name: string;
  /** Returns a reason when the component is stuck, undefined when it progresses. */
  check(now: number): string | undefined;
}

export interface Watchdog {
  start(): void;
  stop(): Promise<void>;
  /** Runs one tick at once (after start-up, so systemd sees STATUS early). */
  tick(): Promise<void>;
  status(): { enabled: boolean; interval_ms: number | null; last_fed_at: string | null; failing: string[] };
}

export interface WatchdogOptions {
  notifier: Notifier;
  /** WATCHDOG_USEC in ms; undefined when systemd runs no watchdog for us. */
  watchdogMs: number | undefined;
  checks: () => readonly ProgressCheck[];
  /** A one-line STATUS= text, sent when it changes. */
  statusLine: () => string;
  logger: Logger;
  /** The checks' clock, ms (default the monotonic one; tests drive their own). */
  now?: () => number;
}

/** Tick period when no watchdog is asked for (STATUS= refresh only). */
const IDLE_PERIOD_MS = 30_000;

export function createWatchdog(options: WatchdogOptions): Watchdog {
  const { notifier, watchdogMs, logger } = options;
  // The monotonic clock: NTP setting the wall clock forward (at every boot of a terminal with no
  // RTC, often during the first face sync) made a busy component look stuck for that long, and
  // the ping was withheld until systemd restarted the agent.
  const now = options.now ?? (() => performance.now());
  // WATCHDOG_USEC/2 is what sd_watchdog_enabled(3) recommends: one lost ping is survivable.
  const period = watchdogMs ? Math.max(50, Math.floor(watchdogMs / 2)) : IDLE_PERIOD_MS;
  const abort = new AbortController();
  let loop: Promise<void> | undefined;
  let lastFed: number | undefined;
  let failing: string[] = [];
  let failingNames: string[] = [];
  let lastStatus = '';

  async function tick(): Promise<void> {
    const t = now();
    const reasons: string[] = [];
    const names: string[] = [];
    for (const c of options.checks()) {
      let reason: string | undefined;
      try {
        reason = c.check(t);
      } catch (err) {
        reason = `check failed: ${(err as Error).message}`;
      }
      if (reason) {
        reasons.push(`${c.name}: ${reason}`);
        names.push(c.name);
      }
    }
    // Log when the set of stuck components changes, not on every tick (the seconds in the text move).
    if (names.join('\n') !== failingNames.join('\n')) {
      if (reasons.length > 0) logger.error({ failing: reasons, watchdog: Boolean(watchdogMs) }, 'a component makes no progress; withholding the watchdog ping so that systemd restarts the agent');
      else if (failing.length > 0) logger.info('all components progress again');
    }
    failing = reasons;
    failingNames = names;
    const fields: Record<string, string> = {};
    if (watchdogMs && reasons.length === 0) {
      fields.WATCHDOG = '1';
      lastFed = Date.now();
    }
    const line = reasons.length > 0 ? `stuck: ${reasons.join('; ')}` : options.statusLine();
    if (line !== lastStatus) {
      fields.STATUS = line;
      lastStatus = line;
    }
    if (Object.keys(fields).length > 0) await notifier.notify(fields);
  }

  return {
    start() {
      if (loop) return;
      loop = (async () => {
        while (await wait(period, abort.signal)) {
          try {
            await tick();
          } catch (err) {
            logger.error({ err }, 'watchdog tick failed');
          }
        }
      })();
    },
    async stop() {
      abort.abort();
      await loop;
    },
    tick,
    status: () => ({
      enabled: Boolean(watchdogMs && notifier.enabled),
      interval_ms: watchdogMs ?? null,
      last_fed_at: lastFed ? new Date(lastFed).toISOString() : null,
      failing: [...failing],
    }),
  };
}

/**
 * A component is wedged when `busy()` stays true longer than `limitMs` while `progress()` (a count
 * of finished work) does not move, e.g. a face sync that stays in state "syncing". Polled on every tick, so it needs no hook in the component.
 */
export function stuckWhileBusy(name: string, limitMs: number, busy: () => boolean, progress: () => number = () => 0): ProgressCheck {
  let since: number | undefined;
  let mark: number | undefined;
  return {
    name,
    check(now) {
      const p = progress();
      if (!busy() || p !== mark) {
        // Idle, or busy but finishing things (a long queue of uploads): both are progress.
        mark = p;
        since = busy() ? now : undefined;
        return undefined;
      }
      since ??= now;
      return now - since > limitMs ? `busy for ${Math.round((now - since) / 1000)}s without finishing (limit ${Math.round(limitMs / 1000)}s)` : undefined;
    },
  };
}
