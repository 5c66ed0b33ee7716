import type { OutboxStore } from './outbox-store.js';

// Startable rows read ahead for the outbox loop (dispatcher.ts): one query per READY_BATCH uploads
// instead of one (with a NOT EXISTS per row) per pass. They stay startable until taken: in id
// order, none shares its kind+name with an earlier unfinished row, only the loop changes a queued
// row, and new rows get higher ids. Dropped on every pause (their wait is decided again) and when
// a run starts.
//
// `stale` says whether the startable rows may differ from the last read, which found all there
// were: new rows (wake()), a step recorded, a pause, or time passing (a timed wake-up of the
// loop). Passes run after every step of every file; with claims kept just ahead of the uploads,
// most found nothing new, a query each.
//
// Claims wait here (whenBelow) so that a burst is claimed a few files ahead of its uploads, not
// all at once: the bytes a claim read are then still kept when its upload comes (claimed-bytes.ts)
// instead of read again. What waits ahead is the rows read and not taken, plus the rows queued
// since the last read (queued()): counting only the first would let claims run on while the last
// rows read are being taken.

/** Startable rows fetched per query. */
const READY_BATCH = 32;

export interface ReadyRows {
  /** The startable rows may have changed: read them again once those read are taken. */
  markStale(): void;
  /** Forgets the rows read (a pause, a new run) and wakes the claims waiting. */
  drop(): void;
  /**
   * Reads the startable rows when none is left and they may have changed. `started` and
   * `finishing` are rows the loop took already: still 'queued' until their first commit.
   */
  refill(now: number, started: ReadonlySet<number>, finishing: ReadonlySet<number>): void;
  /** A row was queued (a claim): it waits ahead of the uploads until a read takes it in. */
  queued(): void;
  /** The next row id to start, in order. */
  take(): number | undefined;
  readonly size: number;
  /** Whether the loop runs: when it does not, no claim waits. */
  setRunning(running: boolean): void;
  /** Wakes the claims whose bound is now met. */
  notify(): void;
  /** Resolves once fewer than `below` rows wait for an upload slot (at once when the loop is not running). */
  whenBelow(below: number): Promise<void>;
}

export function createReadyRows(store: OutboxStore): ReadyRows {
  let ready: number[] = [];
  let stale = true;
  /** Rows queued since the last read (queued()). */
  let added = 0;
  let running = false;
  let waiters: { below: number; resolve(): void }[] = [];
  /** Rows waiting ahead of the uploads: read and not taken, or queued since the last read. */
  const ahead = () => ready.length + added;

  function notify(): void {
    if (waiters.length === 0) return;
    const still: typeof waiters = [];
    for (const w of waiters) {
      if (!running || ahead() < w.below) w.resolve();
      else still.push(w);
    }
    waiters = still;
  }

  return {
    markStale() {
      stale = true;
    },
    drop() {
      ready = [];
      added = 0;
      stale = true;
      notify();
    },
    refill(now, started, finishing) {
      if (ready.length > 0 || !stale) return;
      const limit = READY_BATCH + started.size + finishing.size;
      const ids = store.startable(now, limit);
      added = 0;
      stale = ids.length === limit;
      ready = ids.filter((id) => !started.has(id) && !finishing.has(id));
    },
    queued() {
      added += 1;
    },
    take: () => ready.shift(),
    get size() {
      return ready.length;
    },
    setRunning(value) {
      running = value;
      notify();
    },
    notify,
    whenBelow(below) {
      if (!running || ahead() < below) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ below, resolve }));
    },
  };
}
