import { describe, expect, it } from 'vitest';
import { escapeControls, escapeEach } from '../../src/util/terminal-text.js';

// escapeControls returns text with nothing to escape as it is, after one regular-expression scan;
// whatever it returns must be what the character-by-character walk (escapeEach) gives.

describe('escapeControls', () => {
  it('gives what escapeEach gives for every code unit, alone and beside others, in both modes', () => {
    for (const keep of [false, true]) {
      for (let c = 0; c <= 0xffff; c++) {
        const ch = String.fromCharCode(c);
        for (const text of [ch, `a${ch}b`, `${ch}\udc00`]) expect(escapeControls(text, keep)).toBe(escapeEach(text, keep));
      }
    }
  });

  it('keeps surrogate pairs, escapes lone ones, and leaves plain text alone', () => {
    expect(escapeControls('face 😀 ok')).toBe('face 😀 ok');
    expect(escapeControls('a\ud800b')).toBe('a\\u{d800}b');
    expect(escapeControls('line\nnext\\', true)).toBe('line\nnext\\');
    expect(escapeControls('line\nnext\\')).toBe('line\\nnext\\\\');
    expect(escapeControls('\u202egnp.exe')).toBe('\\u{202e}gnp.exe');
  });
});
