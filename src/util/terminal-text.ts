// Text from outside (face names from the service, its error messages, file names) shown on an
// operator's terminal: control characters are written as escapes so that a name cannot retitle
// the window, clear the screen, move the cursor or hide text, and bidi overrides are escaped
// so that a name cannot display reversed. JSON output never goes through here (it stays exact).

function isBidiControl(c: number): boolean {
  return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c === 0x200e || c === 0x200f || c === 0x061c;
}

/**
 * `text` with C0 and C1 control characters, DEL, lone surrogates and bidi controls escaped (\n,
 * \r, \t, \x1b, \u{202e}) and backslashes doubled. With `keepNewlines`, "\n" stays a line break
 * (for whole messages written line by line) and backslashes stay single.
 */
export function escapeControls(text: string, keepNewlines = false): string {
  // Most text has nothing to escape (every line of --help and of status): one regular-expression
  // scan instead of a character-by-character copy, which cost --help about 0.3 ms.
  return (keepNewlines ? NEEDS_ESCAPE_KEEPING_NEWLINES : NEEDS_ESCAPE).test(text) ? escapeEach(text, keepNewlines) : text;
}

// Every code unit escapeEach changes (any surrogate sends the text to escapeEach, which keeps
// whole pairs): test/util/terminal-text.test.ts holds the two together.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const NEEDS_ESCAPE = /[\x00-\x1f\x7f-\x9f\\\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/;
// eslint-disable-next-line no-control-regex -- as above
const NEEDS_ESCAPE_KEEPING_NEWLINES = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/;

/** escapeControls, one code unit at a time. */
export function escapeEach(text: string, keepNewlines = false): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += text.slice(i, i + 2);
        i++;
      } else out += `\\u{${c.toString(16)}}`;
    } else if (c >= 0xdc00 && c <= 0xdfff) out += `\\u{${c.toString(16)}}`;
    else if (c === 0x0a) out += keepNewlines ? '\n' : '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += keepNewlines ? '\t' : '\\t';
    else if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (isBidiControl(c)) out += `\\u{${c.toString(16)}}`;
    else if (c === 0x5c && !keepNewlines) out += '\\\\';
    else out += text[i];
  }
  return out;
}
