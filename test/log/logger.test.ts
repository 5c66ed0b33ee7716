import { describe, expect, it } from 'vitest';
import { capture } from './capture.js';
import { createLogger, scrubSecrets } from '../../src/log/logger.js';

describe('createLogger', () => {
  it('writes JSON lines with the component of a child logger', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination });
    log.child({ component: 'faces' }).info({ added: 2 }, 'sync done');
    const rec = JSON.parse(lines[0]!);
    expect(rec).toMatchObject({ level: 'info', component: 'faces', added: 2, msg: 'sync done' });
  });

  it('redacts secret-named keys and scrubs secret values anywhere in the line', () => {
    const { lines, destination } = capture();
    const secret = 'ts_9f8e7d6c5b4a39281706';
    const log = createLogger({ destination, secrets: () => [secret] });
    log.info({ terminal_secret: 'other-value-123', headers: { authorization: 'Bearer xyz' } }, 'login');
    log.error({ err: new Error(`request failed with Bearer ${secret}`) }, `oops ${secret}`);
    const all = lines.join('');
    expect(all).not.toContain(secret);
    expect(all).not.toContain('other-value-123');
    expect(all).not.toContain('Bearer xyz');
    expect(all).toContain('[REDACTED]');
  });
});

describe('scrubSecrets', () => {
  it('replaces raw and JSON-escaped forms, ignores very short values', () => {
    expect(scrubSecrets('a "x\\"secret" b', ['x"secret'])).toBe('a "[REDACTED]" b');
    expect(scrubSecrets('abc', ['ab'])).toBe('abc');
    // Every occurrence, and a value with characters a pattern would read specially taken literally.
    expect(scrubSecrets('k=s3cr.t-$& and s3cr.t-$&, s3crat-$&', ['s3cr.t-$&'])).toBe('k=[REDACTED] and [REDACTED], s3crat-$&');
  });
});
