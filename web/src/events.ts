import { useEffect, useRef, useState } from 'preact/hooks';

// One EventSource on /api/events for the whole page, shared by every view that wants live data.
// The browser resumes it with Last-Event-ID after a drop; when the server closed it for good (the
// daemon restarted, the session ended) it is opened again after a pause.

export interface AgentEvent {
  id: number;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

export type LiveState = 'connecting' | 'live' | 'offline';

type Listener = (e: AgentEvent) => void;

interface Stream {
  source: EventSource | undefined;
  listeners: Map<string, Set<Listener>>;
  attached: Set<string>;
  state: LiveState;
  stateListeners: Set<(s: LiveState) => void>;
  retry: ReturnType<typeof setTimeout> | undefined;
  /** Pause before opening a closed stream again, doubled each time up to a minute. */
  backoffMs: number;
}

const stream: Stream = { source: undefined, listeners: new Map(), attached: new Set(), state: 'connecting', stateListeners: new Set(), retry: undefined, backoffMs: 5000 };

function setState(s: LiveState): void {
  if (stream.state === s) return;
  stream.state = s;
  for (const l of stream.stateListeners) l(s);
}

function attach(type: string): void {
  const src = stream.source;
  if (!src || stream.attached.has(type)) return;
  stream.attached.add(type);
  src.addEventListener(type, (m) => {
    let e: AgentEvent;
    try {
      e = JSON.parse((m as MessageEvent<string>).data) as AgentEvent;
    } catch {
      return;
    }
    for (const l of stream.listeners.get(type) ?? []) l(e);
    for (const l of stream.listeners.get('*') ?? []) l(e);
  });
}

function open(): void {
  if (stream.source || typeof EventSource === 'undefined') return;
  const src = new EventSource('/api/events', { withCredentials: true });
  stream.source = src;
  stream.attached.clear();
  for (const type of stream.listeners.keys()) if (type !== '*') attach(type);
  src.onopen = () => {
    stream.backoffMs = 5000;
    setState('live');
  };
  src.onerror = () => {
    if (src.readyState === EventSource.CLOSED) {
      src.close();
      stream.source = undefined;
      setState('offline');
      clearTimeout(stream.retry);
      stream.retry = setTimeout(open, stream.backoffMs);
      stream.backoffMs = Math.min(60_000, stream.backoffMs * 2);
    } else setState('connecting');
  };
}

/** Closes the stream (on logout); the next subscriber opens it again. */
export function closeEvents(): void {
  stream.source?.close();
  stream.source = undefined;
  clearTimeout(stream.retry);
  setState('connecting');
}

export function subscribe(types: readonly string[], cb: Listener): () => void {
  for (const t of types) {
    let set = stream.listeners.get(t);
    if (!set) stream.listeners.set(t, (set = new Set()));
    set.add(cb);
  }
  open();
  for (const t of types) if (t !== '*') attach(t);
  return () => {
    for (const t of types) stream.listeners.get(t)?.delete(cb);
  };
}

/** Calls `cb` for each event of these types while the component is mounted. */
export function useEvents(types: readonly string[], cb: Listener): void {
  const ref = useRef(cb);
  ref.current = cb;
  const key = types.join(',');
  useEffect(() => subscribe(types, (e) => ref.current(e)), [key]);
}

export function useLiveState(): LiveState {
  const [s, set] = useState(stream.state);
  useEffect(() => {
    stream.stateListeners.add(set);
    set(stream.state);
    return () => void stream.stateListeners.delete(set);
  }, []);
  return s;
}
