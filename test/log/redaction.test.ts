import { describe, expect, it } from 'vitest';
import { capture } from './capture.js';
import { createLogger } from '../../src/log/logger.js';

describe('secret-named keys in log lines', () => {
  it('are censored at the top level, one level down, and in headers.authorization; the caller keeps its object', () => {
    const { lines, destination } = capture();
    const v = 'SECRETVALUE';
    const rec = {
      terminal_secret: v, api_key: v, authorization: v, Authorization: v, secret: v, password: v, token: v,
      cfg: { terminal_secret: v, api_key: v, authorization: v, Authorization: v, secret: v, token: v, kept: 'ok' },
      headers: { authorization: v, accept: 'json' },
      req: { headers: { authorization: v, host: 'h' }, method: 'GET' },
      name: 'person-1',
    };
    createLogger({ destination }).info(rec, 'x');
    expect(lines[0]).not.toContain(v);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      name: 'person-1', cfg: { kept: 'ok', secret: '[REDACTED]' }, headers: { accept: 'json' },
      req: { method: 'GET', headers: { host: 'h', authorization: '[REDACTED]' } },
    });
    expect(rec.cfg.secret).toBe(v);
    expect(rec.req.headers.authorization).toBe(v);
  });

  it('leaves an error its message, censors its secret-named fields, and leaves the error as it was', () => {
    const { lines, destination } = capture();
    const err = Object.assign(new Error('refused'), { token: 'tok-123456' });
    createLogger({ destination }).warn({ err }, 'x');
    expect(lines[0]).not.toContain('tok-123456');
    expect(JSON.parse(lines[0]!)).toMatchObject({ err: { message: 'refused', token: '[REDACTED]' } });
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
