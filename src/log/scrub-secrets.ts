// Scrubbing secret values out of text, apart from the logger (logger.ts) so that what only
// scrubs (the event bus, and the CLI commands that import it) does not load pino.

/** Replaces every secret value (and its JSON-escaped form) found in `text`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    // Very short values would scrub ordinary words; secrets are long random strings.
    if (!s || s.length < 6) continue;
    // Looked for before replacing: nearly every line holds none, and a split builds its pieces.
    if (out.includes(s)) out = out.replaceAll(s, '[REDACTED]');
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s && out.includes(escaped)) out = out.replaceAll(escaped, '[REDACTED]');
  }
  return out;
}
