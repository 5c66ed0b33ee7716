// Event stream and journal logging costs, each next to a baseline measured in the same run:
//   npx tsc -p tsconfig.json && node --expose-gc test/bench/events.mjs
// 1. publish() with no subscriber vs building the same event objects in a plain array;
// 2. 100 SSE clients on a unix socket receiving 2000 events vs the same bytes written to 100 plain
//    HTTP responses (no bus, no filter, no backpressure check);
// 3. a client that stops reading while 20 MB of events are published: the daemon's RSS growth vs
//    the same publishing with no client at all;
// 4. 20000 log lines to a journal datagram socket vs pino's JSON lines to /dev/null.
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { createEventBus } = await import(join(ROOT, 'dist/events/event-bus.js'));
const { serveEventStream, formatEvent } = await import(join(ROOT, 'dist/events/sse.js'));
const { createJournalDestination } = await import(join(ROOT, 'dist/log/journal-destination.js'));
const { createLogger } = await import(join(ROOT, 'dist/log/logger.js'));
const require = createRequire(join(ROOT, 'package.json'));
const pino = require('pino');
const unix = require('unix-dgram');
const dir = mkdtempSync(join(tmpdir(), 'ta-bench-events-'));
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const ratio = (a, b) => `${(a / b).toFixed(2)}x`;

// 1
{
  const N = 100_000;
  const data = { kind: 'faces', name: 'ada', file: 'faces/ada.jpg', result_file: '/var/lib/terminal-agent/enroll/done/faces/ada.json' };
  const bus = createEventBus({ capacity: 1000 });
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) bus.publish('enroll.done', data);
  const busMs = ms(t0);
  const plain = [];
  t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) { plain.push({ id: i, type: 'enroll.done', at: new Date().toISOString(), data }); if (plain.length > 1000) plain.shift(); }
  const baseMs = ms(t0);
  console.log(`publish, no subscriber: ${(busMs * 1000 / N).toFixed(2)} us/event; baseline ${(baseMs * 1000 / N).toFixed(2)} us; ratio ${ratio(busMs, baseMs)}`);
}

async function listen(handler) {
  const path = join(dir, `s${Math.random().toString(36).slice(2)}.sock`);
  const srv = createServer(handler);
  await new Promise((r) => srv.listen(path, r));
  return { srv, path };
}
function clients(path, n, expectBytes) {
  return Array.from({ length: n }, () => new Promise((resolve) => {
    let got = 0;
    const req = request({ socketPath: path, path: '/events' }, (res) => {
      res.on('data', (c) => { got += c.length; if (got >= expectBytes) { resolve(true); req.destroy(); } });
      res.on('close', () => resolve(got >= expectBytes));
    });
    req.on('error', () => {});
    req.end();
  }));
}

// 2
{
  const EVENTS = 2000;
  const bus = createEventBus({ capacity: 1000 });
  const sample = formatEvent({ id: 1_700_000_000_000, type: 'faces.synced', at: new Date().toISOString(), data: { i: 1000 } });
  const expect = EVENTS * (sample.length - 6); // a lower bound of what each client receives
  const a = await listen((req, res) => serveEventStream(req, res, bus, { heartbeatMs: 60_000 }));
  const readyA = clients(a.path, 100, expect);
  while (bus.subscribers() < 100) await new Promise((r) => setTimeout(r, 5));
  let t0 = process.hrtime.bigint();
  // In bursts of 50, as a busy daemon would publish (a single burst of 2000 is over the per-client cap).
  for (let i = 0; i < EVENTS; i++) { bus.publish('faces.synced', { i }); if (i % 50 === 49) await new Promise((r) => setImmediate(r)); }
  const complete = (await Promise.all(readyA)).filter(Boolean).length;
  const sseMs = ms(t0);
  const responses = [];
  const b = await listen((req, res) => { res.writeHead(200, { 'content-type': 'text/event-stream' }); responses.push(res); });
  const readyB = clients(b.path, 100, expect);
  while (responses.length < 100) await new Promise((r) => setTimeout(r, 5));
  t0 = process.hrtime.bigint();
  for (let i = 0; i < EVENTS; i++) {
    const text = formatEvent({ id: 1_700_000_000_000 + i, type: 'faces.synced', at: new Date().toISOString(), data: { i } });
    for (const r of responses) r.write(text);
    if (i % 50 === 49) await new Promise((r) => setImmediate(r));
  }
  await Promise.all(readyB);
  const baseMs = ms(t0);
  console.log(`100 clients x ${EVENTS} events delivered: ${sseMs.toFixed(0)} ms; baseline (plain writes) ${baseMs.toFixed(0)} ms; ratio ${ratio(sseMs, baseMs)}; ${complete}/100 clients got every event`);
  for (const s of [a.srv, b.srv]) { s.closeAllConnections(); s.close(); }
}

// 3
{
  const payload = 'x'.repeat(1000);
  const run = async (withStuck) => {
    const bus = createEventBus({ capacity: 1000 });
    let maxBuffered = 0;
    let dropped = false;
    const s = await listen((req, res) => serveEventStream(req, res, bus, { onSlowClient: (info) => { dropped = true; maxBuffered = info.bufferedBytes; } }));
    if (withStuck) {
      const sock = connect(s.path);
      await new Promise((r) => sock.once('connect', r));
      sock.pause();
      sock.on('error', () => {});
      sock.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
      while (bus.subscribers() < 1) await new Promise((r) => setTimeout(r, 5));
    }
    global.gc?.();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 20_000; i++) { bus.publish('enroll.done', { i, payload }); if (i % 500 === 0) await new Promise((r) => setImmediate(r)); }
    global.gc?.();
    const grew = (process.memoryUsage().rss - before) / 1024 / 1024;
    s.srv.closeAllConnections(); s.srv.close();
    return { grew, maxBuffered, dropped };
  };
  const base = await run(false);
  const stuck = await run(true);
  console.log(`20 MB of events, one client not reading: RSS +${stuck.grew.toFixed(1)} MB (${stuck.dropped ? `disconnected with ${(stuck.maxBuffered / 1024).toFixed(0)} KiB buffered, cap 256 KiB` : 'never disconnected'}); no client: RSS +${base.grew.toFixed(1)} MB`);
}

// 4
{
  const N = 20_000;
  const path = join(dir, 'journal.sock');
  const sink = unix.createSocket('unix_dgram', () => {});
  sink.bind(path);
  const journal = createLogger({ destination: createJournalDestination({ socketPath: path, fallback: { write() {} } }), secrets: () => ['ts_live_secret_000'] });
  const json = createLogger({ destination: pino.destination({ dest: openSync('/dev/null', 'w'), sync: true }), secrets: () => ['ts_live_secret_000'] });
  const line = (l) => { for (let i = 0; i < N; i++) l.child({ component: 'enroll' }).info({ kind: 'faces', name: 'ada', file: 'faces/ada.jpg', i }, 'enrollment file done'); };
  let t0 = process.hrtime.bigint(); line(json); const jsonMs = ms(t0);
  t0 = process.hrtime.bigint(); line(journal); const journalMs = ms(t0);
  console.log(`log line: journal ${(journalMs * 1000 / N).toFixed(1)} us; JSON to /dev/null ${(jsonMs * 1000 / N).toFixed(1)} us; ratio ${ratio(journalMs, jsonMs)}`);
  sink.close();
}
rmSync(dir, { recursive: true, force: true });
process.exit(0);
