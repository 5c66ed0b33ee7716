import { describe, expect, it } from 'vitest';
import { capture } from './capture.js';
import { createLogger } from '../../src/log/logger.js';
import { CENSOR, redactKeys } from '../../src/log/redact-keys.js';

describe('redactKeys', () => {
  it('censors every path pino redacted before: top-level names, one level down, and headers.authorization', () => {
    const v = 'SECRETVALUE';
    const rec = {
      terminal_secret: v, api_key: v, authorization: v, Authorization: v, secret: v, password: v, token: v,
      cfg: { terminal_secret: v, api_key: v, authorization: v, Authorization: v, secret: v, token: v, kept: 'ok' },
      headers: { authorization: v, accept: 'json' },
      req: { headers: { authorization: v, host: 'h' }, method: 'GET' },
      name: 'person-1',
    };
    const out = redactKeys(rec);
    expect(JSON.stringify(out)).not.toContain(v);
    expect(out).toMatchObject({ name: 'person-1', cfg: { kept: 'ok' }, headers: { accept: 'json' }, req: { method: 'GET', headers: { host: 'h', authorization: CENSOR } } });
    // The caller's object is left as it was.
    expect(rec.cfg.secret).toBe(v);
    expect(rec.req.headers.authorization).toBe(v);
  });

  it('returns the record itself when nothing is secret, and keeps an Error an Error', () => {
    const rec = { kind: 'faces', file: 'faces/a.jpg', err: new Error('boom') };
    expect(redactKeys(rec)).toBe(rec);
    const err = Object.assign(new Error('refused'), { token: 'tok-123456' });
    const out = redactKeys({ err }) as { err: Error & { token: string } };
    expect(out.err).toBeInstanceOf(Error);
    expect(out.err.message).toBe('refused');
    expect(out.err.token).toBe(CENSOR);
    expect(err.token).toBe('tok-123456');
  });

  it('applies to log calls and child bindings', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination });
    log.child({ component: 'client', token: 'child-token-1' }).warn({ err: Object.assign(new Error('x'), { authorization: 'Bearer abc' }), req: { headers: { authorization: 'Bearer def' } } }, 'request failed');
    const all = lines.join('');
    for (const s of ['child-token-1', 'Bearer abc', 'Bearer def']) expect(all).not.toContain(s);
    expect(JSON.parse(lines[0]!)).toMatchObject({ component: 'client', msg: 'request failed', err: { message: 'x' } });
    // A grandchild keeps both levels of bindings.
    log.child({ component: 'enroll' }).child({ step: 'claim', secret: 'grand-secret-1' }).info('x');
    expect(lines[1]).not.toContain('grand-secret-1');
    expect(JSON.parse(lines[1]!)).toMatchObject({ component: 'enroll', step: 'claim' });
  });
});
