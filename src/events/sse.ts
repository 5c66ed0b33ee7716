import { TRANSIENT_TYPES, type AgentEvent, type EventBus } from './event-bus.js';

// Server-Sent Events from the bus, one handler for the control socket and the web console.
// A client that reads slowly never holds up the publisher: events are written without waiting,
// and the bytes Node buffers for one client are bounded. Past half the bound, transient events
// (level meter, progress) are skipped for that client; past the bound it is disconnected, and
// reconnects with Last-Event-ID to get what it missed from the buffer (or a `resync`).

export interface EventStreamOptions {
  /** A comment line this often keeps proxies and idle timeouts from closing the stream, ms (15 s). */
  heartbeatMs?: number;
  /** Bytes buffered for one client before it is disconnected (256 KiB). */
  maxBufferedBytes?: number;
  /** Only these types (an entry ending in `.` matches a prefix: `enroll.`); all when absent. */
  types?: string[];
  /** Ends the stream (the server is stopping). */
  signal?: AbortSignal;
  /** A client was disconnected for not reading; for logs and metrics. */
  onSlowClient?(info: { bufferedBytes: number; lastId: number }): void;
}

/** What the stream reads of a request (node:http's IncomingMessage, on the control socket and the web console). */
export interface EventStreamRequest {
  url?: string;
  headers: Record<string, string | string[] | undefined>;
}

/** What the stream writes to (node:http's ServerResponse, on the control socket and the web console). */
export interface EventStreamResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(text: string): unknown;
  end(): unknown;
  destroy(): unknown;
  readonly writableLength: number;
  once(event: 'close', listener: () => void): unknown;
  readonly socket?: { setNoDelay?(noDelay?: boolean): unknown } | null;
}

export const DEFAULT_HEARTBEAT_MS = 15_000;
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;
/** How long a client waits before reconnecting (EventSource's `retry:`), ms. */
const RETRY_MS = 2_000;

/** `id:`/`event:`/`data:` of one event; data is the whole event as one JSON line. */
export function formatEvent(e: AgentEvent): string {
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
}

/**
 * Last-Event-ID from the header (EventSource on reconnect, curl -H) or `?last_event_id=` (the first
 * connection of an EventSource cannot set headers). `undefined` when absent; NaN when unreadable.
 */
export function requestedLastId(req: EventStreamRequest): number | undefined {
  const header = req.headers['last-event-id'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? new URL(req.url ?? '/', 'http://x').searchParams.get('last_event_id') ?? undefined;
  if (raw === undefined || raw.trim() === '') return undefined;
  return /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
}

/** `?types=faces.synced,enroll.` narrows the stream; combined with opts.types when both are given. */
export function typeFilter(req: EventStreamRequest, fixed?: string[]): ((type: string) => boolean) {
  const q = new URL(req.url ?? '/', 'http://x').searchParams.get('types');
  const asked = q ? q.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
  const match = (list: string[] | undefined, type: string) => !list || list.some((t) => (t.endsWith('.') ? type.startsWith(t) : type === t));
  return (type) => match(fixed, type) && match(asked, type);
}

export function serveEventStream(req: EventStreamRequest, res: EventStreamResponse, bus: EventBus, opts: EventStreamOptions = {}): void {
  const maxBuffered = opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const wanted = typeFilter(req, opts.types);
  const lastId = requestedLastId(req);
  let sentId = lastId ?? bus.lastId();
  let closed = false;
  let unsubscribe = () => {};

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.socket?.setNoDelay?.(true);
  res.write(`retry: ${RETRY_MS}\n: terminal-agent events\n\n`);

  const heartbeat = setInterval(() => write(': ping\n\n'), opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
  heartbeat.unref();
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    clearInterval(heartbeat);
    opts.signal?.removeEventListener('abort', end);
  };
  const end = () => {
    close();
    res.end();
  };
  const write = (text: string) => {
    if (closed) return;
    if (res.writableLength + Buffer.byteLength(text) > maxBuffered) {
      // Not reading: drop the connection rather than the daemon's memory. The client's
      // Last-Event-ID resumes it from the buffer when it comes back.
      close();
      opts.onSlowClient?.({ bufferedBytes: res.writableLength, lastId: sentId });
      res.destroy();
      return;
    }
    res.write(text);
  };
  const send = (e: AgentEvent) => {
    if (closed || !wanted(e.type)) return;
    if (TRANSIENT_TYPES.has(e.type) && res.writableLength > maxBuffered / 2) return;
    write(formatEvent(e));
    sentId = e.id;
  };

  // Replay first, then live: publish() is synchronous, so nothing can slip in between.
  if (lastId !== undefined) {
    const missed = Number.isNaN(lastId) ? undefined : bus.since(lastId);
    // A replay larger than the client's bound closes it, as a live overrun does.
    if (missed) for (const e of missed) send(e);
    else {
      // What was asked for is gone (buffer overrun, or an id from before a restart): the client
      // must reload its state (GET /status, faces/index.json) and carry on from here.
      const resync = { id: bus.lastId(), type: 'resync', at: new Date().toISOString(), data: { reason: Number.isNaN(lastId) ? 'bad_last_event_id' : 'gone', requested: Number.isNaN(lastId) ? null : lastId, latest: bus.lastId() } };
      write(formatEvent(resync));
    }
  }
  if (closed) return;
  unsubscribe = bus.subscribe(send);
  res.once('close', close);
  if (opts.signal?.aborted) end();
  else opts.signal?.addEventListener('abort', end, { once: true });
}
