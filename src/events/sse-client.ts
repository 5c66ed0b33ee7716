import { request, type IncomingMessage } from 'node:http';
import type { AgentEvent } from './event-bus.js';

// The reading side of GET /events for the CLI (progress while the daemon works) and for tests.
// Plain node:http over the control socket; the SSE framing is a few lines (WHATWG "event stream
// interpretation"), no library needed.

export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/** Splits an event stream into messages; feed it decoded text as it arrives. */
export function createSseParser(onMessage: (m: SseMessage) => void): (text: string) => void {
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  return (text) => {
    buffer += text;
    let nl: number;
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) onMessage({ id, event: event || 'message', data: data.join('\n') });
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id') id = value;
    }
  };
}

export interface EventStreamClient {
  /** Resolves once the daemon answered with the stream (events published after this are seen). */
  ready: Promise<void>;
  /** Resolves when the stream ends (either side closed it). */
  closed: Promise<void>;
  close(): void;
}

export interface OpenEventsOptions {
  socketPath: string;
  /** `?types=`: exact types, or prefixes ending in `.`. */
  types?: string[];
  lastEventId?: number;
  onEvent(e: AgentEvent): void;
  /** Raw text as received (tests that check the framing). */
  onText?(text: string): void;
}

export function openEventStream(o: OpenEventsOptions): EventStreamClient {
  const path = o.types?.length ? `/events?types=${encodeURIComponent(o.types.join(','))}` : '/events';
  let res: IncomingMessage | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const req = request({ socketPath: o.socketPath, path, headers: o.lastEventId !== undefined ? { 'last-event-id': String(o.lastEventId) } : {} });
  const ready = new Promise<void>((resolve, reject) => {
    req.once('response', (r) => {
      res = r;
      if (r.statusCode !== 200) {
        reject(new Error(`GET /events answered HTTP ${r.statusCode}`));
        r.resume();
        return;
      }
      r.setEncoding('utf8');
      const parse = createSseParser((m) => {
        try {
          o.onEvent(JSON.parse(m.data) as AgentEvent);
        } catch {
          // not one of ours: ignore
        }
      });
      r.on('data', (t: string) => {
        o.onText?.(t);
        parse(t);
      });
      r.once('close', resolveClosed);
      r.once('error', () => {});
      resolve();
    });
    req.once('error', (err) => {
      reject(err);
      resolveClosed();
    });
  });
  ready.catch(() => {});
  req.end();
  return {
    ready,
    closed,
    close() {
      res?.destroy();
      req.destroy();
    },
  };
}
