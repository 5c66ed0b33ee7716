// Field builders for the config schema. Each one accepts what an operator writes in YAML, turns it
// into what the code wants (milliseconds, bytes, a URL without trailing slash) and, when it cannot,
// says how to write it correctly. Messages never quote secret values.
import * as z from 'zod/mini';
import { formatDuration, formatSize, parseDuration, parseSize } from '../util/units.js';
import { hasControlChar } from './plain-checks.js';
import { parseListenAddress } from './listen-address.js';

/** zod's wording is for developers; an operator reads "a number" and sees what was there instead. */
function typeName(v: unknown): string {
  if (v === null) return 'null (an empty value)';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return `the text "${v.length > 40 ? `${v.slice(0, 40)}...` : v}"`;
  return `${typeof v} ${String(v)}`;
}

function expected(what: string) {
  return (iss: { input?: unknown }) =>
    iss.input === undefined ? `is required: set it to ${what}` : `must be ${what}, got ${typeName(iss.input)}`;
}

export function text(example = 'a text value') {
  return z.string({ error: expected(example) });
}

/** Secrets: never echo the value (not even its type's content) in a message. */
export function secretText() {
  return z
    .string({ error: (iss) => `must be a quoted text value, got ${iss.input === null ? 'an empty value' : `a ${Array.isArray(iss.input) ? 'list' : typeof iss.input}`} (put it in quotes)` })
    .check(
      z.refine((s) => s.length > 0, 'is empty: set the secret or remove the key'),
      z.refine((s) => !hasControlChar(s), 'contains a line break or control character: it cannot be sent in an HTTP header; check the value'),
    );
}

export function bool() {
  return z.boolean({ error: expected('true or false') });
}

export function choice<const T extends readonly [string, ...string[]]>(values: T) {
  const list = values.join(' | ');
  return z.enum(values, { error: (iss) => `must be one of ${list}, got ${typeName(iss.input)}` });
}

export function integer(min: number, max: number) {
  return z.number({ error: expected(`a whole number from ${min} to ${max}`) }).check(
    z.int({ error: (iss) => `must be a whole number from ${min} to ${max}, got ${String(iss.input)}` }),
    z.gte(min, { error: (iss) => `${String(iss.input)} is too small: use a value from ${min} to ${max}` }),
    z.lte(max, { error: (iss) => `${String(iss.input)} is too large: use a value from ${min} to ${max}` }),
  );
}

export function decimal(min: number, max: number) {
  return z.number({ error: expected(`a number from ${min} to ${max}`) }).check(
    z.gte(min, { error: (iss) => `${String(iss.input)} is too small: use a value from ${min} to ${max}` }),
    z.lte(max, { error: (iss) => `${String(iss.input)} is too large: use a value from ${min} to ${max}` }),
  );
}

/** A duration with a unit (`500ms`, `30s`, `5m`, `1h`), returned in milliseconds. A bare number is
 * refused: `sync_interval: 300` could mean seconds to one operator and milliseconds to another. */
export function duration(minMs: number, maxMs: number) {
  const range = `from ${formatDuration(minMs)} to ${formatDuration(maxMs)}`;
  return z.pipe(z.union([z.string(), z.number()], { error: expected(`a duration such as 500ms, 30s, 5m or 1h`) }), z.transform((v, ctx) => {
    const raw = String(v).trim();
    if (!/[a-z]\s*$/i.test(raw)) {
      ctx.issues.push({ code: 'custom', input: v, message: `"${raw}" has no unit: write it as ${raw}s, ${raw}m or ${raw}ms (units: ms, s, m, h, d)` });
      return z.NEVER;
    }
    const ms = parseDuration(raw);
    if (ms === undefined) {
      ctx.issues.push({ code: 'custom', input: v, message: `"${raw}" is not a duration: write a number and a unit, e.g. 500ms, 30s, 5m, 1h` });
      return z.NEVER;
    }
    if (ms < minMs || ms > maxMs) {
      ctx.issues.push({ code: 'custom', input: v, message: `${raw} is out of range: use a duration ${range}` });
      return z.NEVER;
    }
    return ms;
  }));
}

/** A size (`512KB`, `20MB`, `1GB`, binary multiples; a bare number is bytes), returned in bytes. */
export function size(minBytes: number, maxBytes: number) {
  const range = `from ${formatSize(minBytes)} to ${formatSize(maxBytes)}`;
  return z.pipe(z.union([z.string(), z.number()], { error: expected('a size such as 512KB, 20MB or 1GB') }), z.transform((v, ctx) => {
    const bytes = parseSize(v);
    if (bytes === undefined) {
      ctx.issues.push({ code: 'custom', input: v, message: `"${String(v)}" is not a size: write a number and a unit, e.g. 512KB, 20MB, 1GB` });
      return z.NEVER;
    }
    if (bytes < minBytes || bytes > maxBytes) {
      ctx.issues.push({ code: 'custom', input: v, message: `${String(v)} is out of range: use a size ${range}` });
      return z.NEVER;
    }
    return bytes;
  }));
}

/** An absolute http(s) URL, without trailing slash, query or fragment. */
export function baseUrl(example: string, opts: { mustEndWith?: string } = {}) {
  return z.pipe(z.string({ error: expected(`the service URL, e.g. ${example}`) }), z.transform((v, ctx) => {
    const raw = v.trim();
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      ctx.issues.push({ code: 'custom', input: v, message: `"${raw}" is not a URL: write it in full, e.g. ${example}` });
      return z.NEVER;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      ctx.issues.push({ code: 'custom', input: v, message: `"${raw}" must start with https:// (or http:// for a local emulator), e.g. ${example}` });
      return z.NEVER;
    }
    if (url.search || url.hash || url.username || url.password) {
      ctx.issues.push({ code: 'custom', input: v, message: `"${url.origin}${url.pathname}..." must not carry a query, fragment or user:password; credentials go in terminal_secret/api_key` });
      return z.NEVER;
    }
    const clean = `${url.origin}${url.pathname}`.replace(/\/+$/, '');
    if (opts.mustEndWith && !clean.endsWith(opts.mustEndWith)) {
      const fixed = `${clean.replace(/(\/v1)?(\/api)?$/, '')}${opts.mustEndWith}`;
      ctx.issues.push({ code: 'custom', input: v, message: `"${raw}" must end with ${opts.mustEndWith} (face endpoints live there): did you mean ${fixed}?` });
      return z.NEVER;
    }
    return clean;
  }));
}

/**
 * state_min_free: `auto` (5 %, at least 64 MiB, at most 1 GiB), a size (64MB), or a share of the file system (5%).
 * Resolved to src/disk/disk-floor.ts MinFree.
 */
export function minFree() {
  return z.pipe(z.union([z.string(), z.number()], { error: expected('auto, a size such as 64MB, or a percentage such as 5%') }), z.transform((v, ctx): { bytes: number } | { percent: number } | 'auto' => {
    if (v === 'auto') return 'auto';
    const pct = typeof v === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(v) : null;
    if (pct) {
      const percent = Number(pct[1]);
      if (percent > 50) {
        ctx.issues.push({ code: 'custom', input: v, message: `${v} is out of range: keep at most 50% free for the agent's floor` });
        return z.NEVER;
      }
      return { percent };
    }
    const bytes = parseSize(v);
    if (bytes === undefined) {
      ctx.issues.push({ code: 'custom', input: v, message: `"${String(v)}" is not a size: write auto, a size such as 64MB, or a percentage such as 5%` });
      return z.NEVER;
    }
    return { bytes };
  }));
}

/** The text form of a listen address, validated; `port` 0 takes a free port (for tests). */
export function listenAddress(example: string) {
  return text(`host:port, e.g. ${example}`).check(z.refine((v) => parseListenAddress(v) !== undefined, {
    error: (iss) => `${JSON.stringify(iss.input)} is not host:port: use e.g. ${example} ([::1]:PORT for IPv6), port 0 to 65535`,
  }));
}
