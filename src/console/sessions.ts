import { randomBytes, timingSafeEqual } from 'node:crypto';

// Login sessions, in memory only: a restart logs everyone out, which is the safe default for a
// device. Bounded: past `max` sessions the least recently used one is dropped, so a script that
// logs in in a loop cannot grow the daemon's memory.

export interface Session {
  id: string;
  csrf: string;
  lastSeen: number;
  expiresAt: number;
}

export interface SessionStoreOptions {
  ttlMs: number;
  /** Idle time after which a session ends, ms (default min(ttl, 2 h)). */
  idleMs?: number;
  max?: number;
  now?: () => number;
}

export type SessionStore = ReturnType<typeof createSessionStore>;

export function createSessionStore(opts: SessionStoreOptions) {
  // Monotonic: a wall clock set back by a day would keep every session alive a day longer.
  const now = opts.now ?? (() => performance.now());
  const max = opts.max ?? 32;
  const idleMs = opts.idleMs ?? Math.min(opts.ttlMs, 2 * 60 * 60_000);
  // Map keeps insertion order: re-inserting on use makes the first entry the least recently used.
  const sessions = new Map<string, Session>();

  const alive = (s: Session, t: number) => t < s.expiresAt && t - s.lastSeen < idleMs;

  return {
    create(): Session {
      const t = now();
      for (const [id, s] of sessions) if (!alive(s, t)) sessions.delete(id);
      while (sessions.size >= max) sessions.delete(sessions.keys().next().value!);
      const s: Session = { id: token(), csrf: token(), lastSeen: t, expiresAt: t + opts.ttlMs };
      sessions.set(s.id, s);
      return s;
    },
    /** The live session of this cookie value, refreshed; undefined when unknown or expired. */
    get(id: string | undefined): Session | undefined {
      if (!id) return undefined;
      const s = sessions.get(id);
      if (!s) return undefined;
      const t = now();
      if (!alive(s, t)) {
        sessions.delete(id);
        return undefined;
      }
      s.lastSeen = t;
      sessions.delete(id);
      sessions.set(id, s);
      return s;
    },
    destroy(id: string): void {
      sessions.delete(id);
    },
    size: () => sessions.size,
    ttlMs: opts.ttlMs,
  };
}

function token(): string {
  return randomBytes(32).toString('base64url');
}

export function sameToken(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
