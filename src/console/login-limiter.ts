
// Login attempts per client address, as a token bucket: `burst` tries at once, then one more every
// `refillMs`. A refused caller is told when to come back (Retry-After). The table is bounded; when
// full, the entry touched longest ago goes (an attacker cycling addresses gains little: each new
// address still has only `burst` tries, and every try costs a slow scrypt).

export interface LoginLimiterOptions {
  burst?: number;
  refillMs?: number;
  maxClients?: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export type LoginLimiter = ReturnType<typeof createLoginLimiter>;

export function createLoginLimiter(opts: LoginLimiterOptions = {}) {
  const burst = opts.burst ?? 5;
  const refillMs = opts.refillMs ?? 30_000;
  const maxClients = opts.maxClients ?? 1024;
  // Monotonic: a wall clock set back would keep a locked-out address locked out for as long.
  const now = opts.now ?? (() => performance.now());
  const buckets = new Map<string, Bucket>();

  function current(client: string): Bucket {
    const t = now();
    const b = buckets.get(client) ?? { tokens: burst, at: t };
    const gained = Math.floor((t - b.at) / refillMs);
    if (gained > 0) {
      b.tokens = Math.min(burst, b.tokens + gained);
      b.at = b.tokens === burst ? t : b.at + gained * refillMs;
    }
    buckets.delete(client);
    buckets.set(client, b);
    while (buckets.size > maxClients) buckets.delete(buckets.keys().next().value!);
    return b;
  }

  return {
    /** Takes one try; returns 0 when allowed, else the seconds to wait. */
    take(client: string): number {
      const b = current(client);
      if (b.tokens > 0) {
        b.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((b.at + refillMs - now()) / 1000));
    },
    /** A successful login gives the address its full allowance back. */
    reset(client: string): void {
      buckets.delete(client);
    },
  };
}
