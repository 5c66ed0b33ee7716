import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api } from './api';
import { useEvents, useLiveState } from './events';

// Data a page shows, fetched on mount and fetched again when one of the named events arrives (a
// burst of events makes one request), and every `intervalMs` as a safety net for missed events.
// Without an event stream (an older daemon, a proxy that buffers) it asks every few seconds instead.
// The last good data stays on screen while a refresh is under way or has failed.

const POLL_WITHOUT_EVENTS_MS = 5000;

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
  const live = useLiveState();
  const every = opts.intervalMs === undefined ? undefined : live === 'live' ? opts.intervalMs : Math.min(opts.intervalMs, POLL_WITHOUT_EVENTS_MS);

  const load = useCallback(() => {
    if (path === undefined) return;
    const mine = ++seq.current;
    setLoading(true);
    api.get<T>(path).then(
      (d) => {
        if (mine !== seq.current) return;
        setData(d);
        setError(undefined);
        setLoading(false);
      },
      (e: unknown) => {
        if (mine !== seq.current) return;
        setError(e instanceof ApiError ? e : new ApiError(0, { code: 'E_CONSOLE', message: String(e) }));
        setLoading(false);
      },
    );
  }, [path]);

  useEffect(load, [load]);
  useEffect(() => {
    if (!every) return;
    const t = setInterval(() => {
      if (document.visibilityState === 'visible') load();
    }, every);
    return () => clearInterval(t);
  }, [load, every]);

  useEffect(() => () => clearTimeout(timer.current), []);

  useEvents(opts.refreshOn ?? [], () => {
    clearTimeout(timer.current);
    timer.current = setTimeout(load, 150);
  });

  return { data, error, loading, reload: load };
}
