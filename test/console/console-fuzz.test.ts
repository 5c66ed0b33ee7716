import { describe, expect, it } from 'vitest';
import { consoleClient } from './console-client.js';
import { firstBody } from '../helpers/fuzz-http.js';
import { expectAnsweredCleanly, fuzzListener, useFuzzDaemon } from '../helpers/fuzz-daemon.js';

// The web console against 500+ malformed requests from a fixed seed (FUZZ_SEED replays another),
// over TCP to a real daemon: with a session, so they reach the API's routes, not only the login.

const daemon = useFuzzDaemon('ta-console-fuzz-');

describe('the web console under malformed requests', () => {
  it('answers each with a 4xx or 5xx in its JSON error shape, and the daemon serves on as the same process', { timeout: 90_000 }, async () => {
    const d = daemon.get();
    const c = consoleClient(`http://127.0.0.1:${d.consolePort}/`);
    const session = await c.call('GET', '/api/session');
    expect(session.status).toBe(200);
    const headers = { Host: `127.0.0.1:${d.consolePort}`, Cookie: c.cookie!, 'X-CSRF-Token': session.json().csrf_token as string };
    const paths = ['/', '/index.html', '/assets/app.js', '/api/status', '/api/faces?limit=5', '/api/faces/f1/thumb', '/api/faces/%zz/image', '/api/enroll',
      '/api/enroll/file?path=../x', '/api/enroll/upload?name=a.jpg', '/api/enroll/retry', '/api/say', '/api/tts?text=hi', '/api/voices', '/api/events', '/api/login', '/api/logout', '/api/voiceprint/enroll'];
    const run = await fuzzListener(d, 'web console', { host: '127.0.0.1', port: d.consolePort }, { paths, headers }, async () => {
      // A fresh session: the fuzz may have logged the first one out (POST /api/logout).
      const fresh = consoleClient(`http://127.0.0.1:${d.consolePort}/`);
      expect((await fresh.call('GET', '/api/session')).status).toBe(200);
      expect((await fresh.call('GET', '/api/status')).status).toBe(200);
    });
    expectAnsweredCleanly(d, run);
    // Refusals are the console's JSON error, whoever made them (the parser or a route).
    for (const { answer } of run.answers.filter((a) => a.answer.status !== undefined && a.answer.status >= 400 && a.answer.status !== 404)) {
      const body = firstBody(answer.text);
      if (body?.startsWith('{')) expect(JSON.parse(body)).toMatchObject({ error: { code: expect.stringMatching(/^TA_ERR_/), message: expect.any(String) } });
    }
  });
});
