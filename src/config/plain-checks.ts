// Checks of config values that code outside the config reader needs too (file names in the
// enrollment folders, listen addresses, base URLs, secrets), apart from the schema so that using
// them does not import zod.

/** A control character (line break, NUL, DEL...) cannot travel in an HTTP header. */
export function hasControlChar(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** A YAML mapping (not a list, not a scalar). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
