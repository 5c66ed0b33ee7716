import { describe, expect, it } from 'vitest';
import { scrubSecrets } from '../../src/log/scrub-secrets.js';

// Secrets are scrubbed from every log line and event, as they are and in the form JSON gives
// them inside a string (a log line is JSON: a secret holding a quote appears escaped there).

describe('scrubSecrets', () => {
  it('scrubs a secret as it is and, when JSON escapes any of its characters, in its escaped form', () => {
    const plain = 'tok-3f9a0c1d2e';
    const quoted = 'pa"ss\\wo\trd-77';
    const line = JSON.stringify({ msg: `sent ${plain}`, err: `refused ${quoted}`, raw: quoted });
    const out = scrubSecrets(line, [plain, quoted]);
    expect(out).not.toContain(plain);
    expect(out).not.toContain(JSON.stringify(quoted).slice(1, -1));
    expect(JSON.parse(out)).toEqual({ msg: 'sent [REDACTED]', err: 'refused [REDACTED]', raw: '[REDACTED]' });
    // Too short to be a secret: ordinary words stay.
    expect(scrubSecrets('a short word', ['short'])).toBe('a short word');
  });

  it('looks for the escaped form of every character JSON.stringify escapes, and only then', () => {
    // Every UTF-16 code unit inside a secret: the escaped form is found exactly when JSON
    // writes that character differently (quote, backslash, controls, lone surrogates).
    for (let c = 0; c <= 0xffff; c++) {
      const secret = `secret-${String.fromCharCode(c)}-x`;
      const escaped = JSON.stringify(secret).slice(1, -1);
      const text = `{"msg":"${escaped}"}`;
      expect(scrubSecrets(text, [secret]), `U+${c.toString(16)}`).toBe('{"msg":"[REDACTED]"}');
    }
  });
});
