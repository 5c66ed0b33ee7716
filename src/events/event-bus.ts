import { scrubSecrets } from '../log/scrub-secrets.js';

// What happened in the agent, in order, for programs on the terminal (GET /events on the control
// socket, the web console). One bus per daemon process: it outlives a SIGHUP reload, so a client's
// Last-Event-ID still means something after the components were rebuilt.

export interface AgentEvent {
  id: number;
  type: string;
  /** ISO time of publication. */
  at: string;
  data: Record<string, unknown>;
}

/** What a component needs: publish only (components never read the stream). */
export interface EventPublisher {
  publish(type: string, data: Record<string, unknown>): AgentEvent;
}

export interface EventBus extends EventPublisher {
  /**
   * Replayable events after `lastId`, oldest first; `undefined` when some of them are gone: fell
   * out of the bounded buffer, or `lastId` is not from this daemon's run (a restart).
   */
  since(lastId: number): AgentEvent[] | undefined;
  subscribe(listener: (e: AgentEvent) => void): () => void;
  /** Highest id published so far (`firstId - 1` before the first event). */
  lastId(): number;
  /** Live subscribers (for status and metrics). */
  subscribers(): number;
}

export interface EventBusOptions {
  /** Replayable events kept, default 1000. */
  capacity?: number;
  /** Id of the first event; default Date.now(), so that ids keep growing across restarts. */
  firstId?: number;
  now?: () => number;
  /**
   * Returns the secret values in use: any found in an event's data is replaced, as in log lines.
   * Event data carries error messages, which may quote whatever a library put in them.
   */
  secrets?: () => readonly string[];
}

/**
 * Events published many times a second that are only useful live (a level meter, download
 * progress): they get an id and reach subscribers, but are not kept for replay, so that a long
 * recording cannot push an `enroll.done` out of the buffer.
 */
export const TRANSIENT_TYPES: ReadonlySet<string> = new Set(['voiceprint.level', 'faces.sync.progress']);

export const DEFAULT_CAPACITY = 1000;

function scrubData(data: Record<string, unknown>, secrets: readonly string[]): Record<string, unknown> {
  const text = JSON.stringify(data);
  const clean = scrubSecrets(text, secrets);
  return clean === text ? data : (JSON.parse(clean) as Record<string, unknown>);
}

/**
 * An event whose data is scrubbed when first read (a subscriber, a replay), with the secrets in
 * use when it was published: most events are never read, and the JSON round trip was a good part
 * of publishing one. A class rather than a getter per event: the ring keeps a thousand of them.
 */
class PublishedEvent implements AgentEvent {
  readonly #raw: Record<string, unknown>;
  readonly #secrets: readonly string[] | undefined;
  #data: Record<string, unknown> | undefined;

  constructor(readonly id: number, readonly type: string, readonly at: string, raw: Record<string, unknown>, secrets: readonly string[] | undefined) {
    this.#raw = raw;
    this.#secrets = secrets;
  }

  get data(): Record<string, unknown> {
    this.#data ??= this.#secrets && this.#secrets.length > 0 ? scrubData(this.#raw, this.#secrets) : this.#raw;
    return this.#data;
  }

  /** What JSON.stringify writes (the SSE stream): the data is a getter, which it would leave out. */
  toJSON(): AgentEvent {
    return { id: this.id, type: this.type, at: this.at, data: this.data };
  }
}

export function createEventBus(opts: EventBusOptions = {}): EventBus {
  const capacity = Math.max(1, opts.capacity ?? DEFAULT_CAPACITY);
  const now = opts.now ?? Date.now;
  const firstId = opts.firstId ?? now();
  // A ring of replayable events; `start` is the index of the oldest.
  const ring: AgentEvent[] = [];
  let start = 0;
  let nextId = firstId;
  /** Highest id that fell out of the ring: a client that saw less has missed something. */
  let evictedUpTo = firstId - 1;
  const listeners = new Set<(e: AgentEvent) => void>();

  return {
    publish(type, raw) {
      const event = new PublishedEvent(nextId++, type, new Date(now()).toISOString(), raw, opts.secrets?.());
      if (!TRANSIENT_TYPES.has(type)) {
        if (ring.length < capacity) ring.push(event);
        else {
          evictedUpTo = ring[start]!.id;
          ring[start] = event;
          start = (start + 1) % capacity;
        }
      }
      // A listener that throws must not stop the others, nor the component that published.
      for (const l of [...listeners]) {
        try {
          l(event);
        } catch {
          // the SSE writer handles its own errors; nothing useful to do here
        }
      }
      return event;
    },
    since(lastId) {
      if (!Number.isSafeInteger(lastId) || lastId < evictedUpTo || lastId < firstId - 1 || lastId >= nextId) return undefined;
      const out: AgentEvent[] = [];
      for (let i = 0; i < ring.length; i++) {
        const e = ring[(start + i) % ring.length]!;
        if (e.id > lastId) out.push(e);
      }
      return out;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    lastId: () => nextId - 1,
    subscribers: () => listeners.size,
  };
}
