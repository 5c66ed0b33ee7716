import { describe, expect, it } from 'vitest';
import { consoleClient } from '../console/console-client.js';
import { expectAnsweredCleanly, fuzzListener, useFuzzDaemon } from '../helpers/fuzz-daemon.js';

// The event stream (SSE) on the control socket and on the web console, against 500+ malformed
// requests each from a fixed seed (FUZZ_SEED replays another): odd filters and Last-Event-IDs,
// and streams the client walks away from, to a real daemon.

const daemon = useFuzzDaemon('ta-events-fuzz-');

const queries = ['', '?types=', '?types=%zz', '?types=faces.,enroll.', '?last_event_id=abc', '?last_event_id=-1', '?last_event_id=99999999999999999999', '?types=,,,&last_event_id=%00'];

describe('the event stream under malformed requests', () => {
  it('on the control socket: each is answered or streamed, and the daemon serves on as the same process', { timeout: 90_000 }, async () => {
    const d = daemon.get();
    const run = await fuzzListener(d, 'events (control socket)', { path: d.files.socketPath }, { paths: queries.map((q) => `/events${q}`), headers: { 'Last-Event-ID': '1' } }, async () => undefined);
    expectAnsweredCleanly(d, run);
    // Well-formed ones among them streamed: the stream was not broken by its neighbours.
    expect(run.answers.some((a) => a.answer.status === 200 && a.answer.text.includes(': terminal-agent events'))).toBe(true);
  });

  it('on the web console: the same', { timeout: 90_000 }, async () => {
    const d = daemon.get();
    const c = consoleClient(`http://127.0.0.1:${d.consolePort}/`);
    const session = await c.call('GET', '/api/session');
    const headers = { Host: `127.0.0.1:${d.consolePort}`, Cookie: c.cookie!, 'Last-Event-ID': 'x' };
    expect(session.status).toBe(200);
    const run = await fuzzListener(d, 'events (web console)', { host: '127.0.0.1', port: d.consolePort }, { paths: queries.map((q) => `/api/events${q}`), headers }, async () => {
      expect((await c.call('GET', '/api/status')).status).toBe(200);
    });
    expectAnsweredCleanly(d, run);
    expect(run.answers.some((a) => a.answer.status === 200 && a.answer.text.includes(': terminal-agent events'))).toBe(true);
  });
});
