// Scrubbing secret values out of text, apart from the logger (logger.ts) so that what only
// scrubs (the event bus, and the CLI commands that import it) does not load pino.

/** True when JSON.stringify would escape a character of `s`: quote, backslash, controls, (lone) surrogates. */
function jsonEscapes(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return true;
  }
  return false;
}

/** Replaces every secret value (and its JSON-escaped form) found in `text`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    // Very short values would scrub ordinary words; secrets are long random strings.
    if (!s || s.length < 6) continue;
    // Looked for before replacing: nearly every line holds none, and a split builds its pieces.
    if (out.includes(s)) out = out.replaceAll(s, '[REDACTED]');
    // Its JSON form differs only when it holds a character JSON escapes (tested first: every log
    // line and event runs this, and a stringify per secret was most of its cost).
    if (!jsonEscapes(s)) continue;
    const escaped = JSON.stringify(s).slice(1, -1);
    if (out.includes(escaped)) out = out.replaceAll(escaped, '[REDACTED]');
  }
  return out;
}
