import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api } from './api';
import { useEvents, useLiveState } from './events';

// Data a page shows, fetched on mount and fetched again when one of the named events arrives (a
// burst of events makes one request), and every `intervalMs` as a safety net for missed events.
// Without an event stream (an older daemon, a proxy that buffers) it asks every few seconds instead.
// The last good data stays on screen while a refresh is under way or has failed.
//
// Refreshes for events are spaced by what the last one took: the next starts SPACING times that
// after it (at least DEBOUNCE_MS after the event, at most MAX_SPACING_MS), and never while one is
// under way. With 10,000 faces the gallery's list costs the daemon about 95 ms of CPU (half a
// second on a Pi's quarter core), and an enrollment burst into such a group syncs a few times a
// second: each sync's event asked for the whole list again, and the page took most of the core
// the burst needed. Spaced, the page's asks take about a tenth of the daemon's time; with a small
// group a refresh takes milliseconds, so it still follows each event at once.

const POLL_WITHOUT_EVENTS_MS = 5000;
const DEBOUNCE_MS = 150;
const SPACING = 10;
const MAX_SPACING_MS = 10_000;

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

export function useResource<T>(path: string | undefined, opts: { refreshOn?: readonly string[]; intervalMs?: number } = {}): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(path !== undefined);
  const seq = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  /** The last load: when it started, what it took, whether it is under way, and whether an event came meanwhile. */
  const last = useRef({ startedAt: -Infinity, tookMs: 0, running: false, again: false });
  const afterEvent = useRef<() => void>(() => undefined);
  const live = useLiveState();
  const every = opts.intervalMs === undefined ? undefined : live === 'live' ? opts.intervalMs : Math.min(opts.intervalMs, POLL_WITHOUT_EVENTS_MS);

  const load = useCallback(() => {
    if (path === undefined) return;
    const mine = ++seq.current;
    const startedAt = performance.now();
    last.current = { ...last.current, startedAt, running: true };
    setLoading(true);
    const settled = () => {
      const l = last.current;
      last.current = { ...l, tookMs: performance.now() - startedAt, running: false, again: false };
      if (l.again) afterEvent.current();
    };
    api.get<T>(path).then(
      (d) => {
        if (mine !== seq.current) return;
        settled();
        setData(d);
        setError(undefined);
        setLoading(false);
      },
      (e: unknown) => {
        if (mine !== seq.current) return;
        settled();
        setError(e instanceof ApiError ? e : new ApiError(0, { code: 'E_CONSOLE', message: String(e) }));
        setLoading(false);
      },
    );
  }, [path]);

  afterEvent.current = () => {
    clearTimeout(timer.current);
    const l = last.current;
    if (l.running) {
      l.again = true;
      return;
    }
    const due = l.startedAt + Math.min(MAX_SPACING_MS, SPACING * l.tookMs);
    timer.current = setTimeout(() => {
      if (last.current.running) last.current.again = true;
      else load();
    }, Math.max(DEBOUNCE_MS, due - performance.now()));
  };

  useEffect(load, [load]);
  useEffect(() => {
    if (!every) return;
    const t = setInterval(() => {
      if (document.visibilityState === 'visible') load();
    }, every);
    return () => clearInterval(t);
  }, [load, every]);

  useEffect(() => () => {
    // A load that settles after the page left must not schedule another.
    afterEvent.current = () => undefined;
    clearTimeout(timer.current);
  }, []);

  useEvents(opts.refreshOn ?? [], () => afterEvent.current());

  return { data, error, loading, reload: load };
}
