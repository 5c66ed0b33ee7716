// Scrubbing secret values out of text, apart from the logger (logger.ts) so that what only
// scrubs (the event bus, and the CLI commands that import it) does not load pino.

/** Replaces every secret value (and its JSON-escaped form) found in `text`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    // Very short values would scrub ordinary words; secrets are long random strings.
    if (!s || s.length < 6) continue;
    out = out.split(s).join('[REDACTED]');
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s) out = out.split(escaped).join('[REDACTED]');
  }
  return out;
}
