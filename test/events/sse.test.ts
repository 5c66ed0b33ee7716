import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createEventBus, type AgentEvent, type EventBus } from '../../src/events/event-bus.js';
import { serveEventStream, type EventStreamOptions } from '../../src/events/sse.js';
import { openEventStream, type EventStreamClient } from '../../src/events/sse-client.js';
import { tmpDir } from '../helpers/tmp.js';

// GET /events over a real unix socket and real HTTP, as programs on the terminal read it.

interface Fixture {
  bus: EventBus;
  socketPath: string;
  responses: Set<ServerResponse>;
  stop: AbortController;
}

const servers: Server[] = [];
const clients: EventStreamClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(opts: Omit<EventStreamOptions, 'signal'> = {}, capacity?: number): Promise<Fixture> {
  const bus = createEventBus({ firstId: 1, ...(capacity ? { capacity } : {}) });
  const socketPath = join(tmpDir('ta-sse-'), 'events.sock');
  const responses = new Set<ServerResponse>();
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  const srv = createServer((req, res) => {
    responses.add(res);
    res.once('close', () => responses.delete(res));
    serveEventStream(req, res, bus, { ...opts, signal: stop.signal });
  });
  await new Promise<void>((r) => srv.listen(socketPath, r));
  servers.push(srv);
  return { bus, socketPath, responses, stop };
}

function collect(f: Fixture, extra: { lastEventId?: number; types?: string[] } = {}) {
  const events: AgentEvent[] = [];
  let text = '';
  const client = openEventStream({ socketPath: f.socketPath, ...extra, onEvent: (e) => events.push(e), onText: (t) => (text += t) });
  clients.push(client);
  return { events, client, text: () => text };
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(10);
  }
}

describe('GET /events (Server-Sent Events)', () => {
  it('delivers events in order with id, event and data lines', async () => {
    const f = await serve();
    const c = collect(f);
    await c.client.ready;
    for (let i = 0; i < 50; i++) f.bus.publish(i % 2 ? 'enroll.done' : 'faces.synced', { i });
    await until(() => c.events.length === 50);
    expect(c.events.map((e) => e.data.i)).toEqual([...Array(50).keys()]);
    expect(c.events.map((e) => e.id)).toEqual([...Array(50).keys()].map((i) => i + 1));
    expect(c.text()).toContain('id: 2\nevent: enroll.done\ndata: {"id":2,"type":"enroll.done"');
  });

  it('resumes after Last-Event-ID with what was missed, then goes on live', async () => {
    const f = await serve();
    for (let i = 0; i < 10; i++) f.bus.publish('enroll.done', { i });
    const c = collect(f, { lastEventId: 6 });
    await c.client.ready;
    f.bus.publish('enroll.failed', { i: 10 });
    await until(() => c.events.length === 5);
    expect(c.events.map((e) => e.id)).toEqual([7, 8, 9, 10, 11]);
  });

  it('tells the client to resync when what it asked for has left the buffer', async () => {
    const f = await serve({}, 5);
    for (let i = 0; i < 20; i++) f.bus.publish('enroll.done', { i });
    const c = collect(f, { lastEventId: 3 });
    await c.client.ready;
    f.bus.publish('faces.synced', {});
    await until(() => c.events.length === 2);
    expect(c.events[0]).toMatchObject({ type: 'resync', id: 20, data: { reason: 'gone', requested: 3, latest: 20 } });
    expect(c.events[1]).toMatchObject({ type: 'faces.synced', id: 21 });
  });

  it('filters by ?types= (exact names and prefixes)', async () => {
    const f = await serve();
    const c = collect(f, { types: ['faces.synced', 'enroll.'] });
    await c.client.ready;
    for (const t of ['speech.started', 'enroll.done', 'faces.synced', 'voiceprint.level', 'enroll.failed']) f.bus.publish(t, {});
    await until(() => c.events.length === 3);
    await sleep(50);
    expect(c.events.map((e) => e.type)).toEqual(['enroll.done', 'faces.synced', 'enroll.failed']);
  });

  it('sends heartbeats on a quiet stream', async () => {
    const f = await serve({ heartbeatMs: 50 });
    const c = collect(f);
    await c.client.ready;
    await until(() => (c.text().match(/: ping/g) ?? []).length >= 2);
  });

  it('disconnects a client that stops reading, keeps its own memory bounded, and goes on serving the others', async () => {
    const max = 64 * 1024;
    const drops: number[] = [];
    const f = await serve({ maxBufferedBytes: max, onSlowClient: (i) => drops.push(i.bufferedBytes) });
    // The stuck client: a raw connection that sends the request and never reads the answer.
    const stuck = connect(f.socketPath);
    await new Promise((r) => stuck.once('connect', r));
    stuck.pause();
    stuck.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
    let stuckClosed = false;
    stuck.once('close', () => (stuckClosed = true));
    stuck.on('error', () => {});
    const good = collect(f);
    await good.client.ready;
    await until(() => f.responses.size === 2);
    const payload = 'x'.repeat(1000);
    let maxBuffered = 0;
    for (let i = 0; i < 3000; i++) {
      f.bus.publish('enroll.done', { i, payload });
      for (const r of f.responses) maxBuffered = Math.max(maxBuffered, r.writableLength);
      // A reading client keeps up (it is never more than a few events behind)...
      if (i % 20 === 19) await until(() => good.events.length === i + 1);
    }
    await until(() => good.events.length === 3000);
    expect(good.events.at(-1)!.data.i).toBe(2999);
    expect(drops).toHaveLength(1);
    // What Node buffered for the stuck client never went past the bound (plus at most one event).
    expect(maxBuffered).toBeLessThanOrEqual(max + 1200);
    stuck.resume();
    await until(() => stuckClosed);
    expect(f.bus.subscribers()).toBe(1);
  });

  it('serves 100 clients at once, each getting every event in order', async () => {
    const f = await serve();
    const many = Array.from({ length: 100 }, () => collect(f));
    await Promise.all(many.map((m) => m.client.ready));
    expect(f.bus.subscribers()).toBe(100);
    for (let i = 0; i < 200; i++) f.bus.publish('faces.synced', { i });
    await until(() => many.every((m) => m.events.length === 200), 20_000);
    for (const m of many) expect(m.events.map((e) => e.data.i)).toEqual([...Array(200).keys()]);
    for (const m of many) m.client.close();
    await until(() => f.bus.subscribers() === 0);
  });

  it('ends every stream when the server stops', async () => {
    const f = await serve();
    const c = collect(f);
    await c.client.ready;
    f.stop.abort();
    await c.client.closed;
    expect(f.bus.subscribers()).toBe(0);
  });

  it('answers a Last-Event-ID that is not a number with a resync', async () => {
    const f = await serve();
    f.bus.publish('faces.synced', {});
    const socket = connect(f.socketPath);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (t: string) => (text += t));
    socket.write('GET /events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: abc\r\n\r\n');
    await until(() => text.includes('event: resync'));
    expect(text).toContain('"reason":"bad_last_event_id"');
    socket.destroy();
  });
});
