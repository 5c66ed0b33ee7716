import { describe, expect, it } from 'vitest';
import { expectAnsweredCleanly, fuzzListener, useFuzzDaemon } from '../helpers/fuzz-daemon.js';

// The control socket (node:http on a unix socket) against 500+ malformed requests from a fixed
// seed (FUZZ_SEED replays another), to a real daemon.

const daemon = useFuzzDaemon('ta-control-fuzz-');

describe('the control socket under malformed requests', () => {
  it('answers each with a 4xx or 5xx in its JSON error shape, and the daemon serves on as the same process', { timeout: 90_000 }, async () => {
    const d = daemon.get();
    const paths = ['/status', '/faces', '/faces/sync', '/say', '/voiceprint/enroll', '/metrics', '/nowhere'];
    const run = await fuzzListener(d, 'control socket', { path: d.files.socketPath }, { paths }, async () => undefined);
    expectAnsweredCleanly(d, run);
    for (const { req, answer } of run.answers.filter((a) => a.answer.status !== undefined && a.answer.status >= 400)) {
      const body = answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4);
      // HEAD gets the head alone.
      if (/^HEAD /.test(req.bytes.toString('latin1'))) continue;
      expect(body, `${req.kind}: ${JSON.stringify(req.bytes.toString('latin1').slice(0, 200))} -> ${JSON.stringify(answer.text.slice(0, 300))}`).toMatch(/^\{/);
      expect(JSON.parse(body)).toMatchObject({ error: expect.any(String), code: expect.stringMatching(/^TA_ERR_/), exit_code: expect.any(Number) });
    }
  });
});
