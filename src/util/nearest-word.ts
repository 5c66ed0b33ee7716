// Suggestions for a misspelt word: a config key (config/did-you-mean.ts) or a command (cli/run-cli.ts).

/** Levenshtein distance (insert, delete, substitute; an adjacent swap counts 2), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = cur;
  }
  return prev[t.length]!;
}

/** The closest candidate, when it is close enough to be a plausible typo of `word`. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    const w = word.replace(/-/g, '_').toLowerCase();
    // `loggin` for `log`, `voice_print` for `voiceprint`: a prefix or an extra separator is a typo too.
    // `max_size` for `max_file_size`: every word of the typo is a word of the key.
    const words = w.split('_').filter(Boolean);
    const subset = words.length > 1 && words.every((x) => c.split('_').includes(x));
    const d = w === c ? 0
      : c.length >= 3 && (w.startsWith(c) || c.startsWith(w)) ? 1
        : w.replace(/_/g, '') === c.replace(/_/g, '') ? 1
          : Math.min(editDistance(w, c), subset ? 2 : Infinity);
    if (d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  const limit = Math.max(2, Math.floor(word.length / 3));
  return best !== undefined && bestDist <= limit ? best : undefined;
}
