// Parsers for the config's human units. They return undefined on bad input so that the config
// schema can report the problem with its line number instead of throwing.

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE_UNITS: Record<string, number> = {
  b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3, k: 1024, m: 1024 ** 2, g: 1024 ** 3,
  kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3,
};

/** `500ms`, `30s`, `5m`, `1h`, `1.5s`; a bare number is milliseconds. */
export function parseDuration(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) && input >= 0 ? input : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(input);
  if (!m) return undefined;
  const unit = DURATION_UNITS[(m[2] ?? 'ms').toLowerCase()]!;
  return Math.round(Number(m[1]) * unit);
}

/** `512KB`, `20MB`, `1GB` (binary multiples); a bare number is bytes. */
export function parseSize(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isInteger(input) && input >= 0 ? input : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)?\s*$/i.exec(input);
  if (!m) return undefined;
  const unit = SIZE_UNITS[(m[2] ?? 'b').toLowerCase()];
  if (unit === undefined) return undefined;
  return Math.round(Number(m[1]) * unit);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
  return `${Math.floor(ms / 3_600_000)}h${Math.round((ms % 3_600_000) / 60_000)}m`;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)}KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)}MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)}GB`;
}
