// A small de-duplicating work queue: each key is processed once at a time, `limit` keys at once.

export function createWorkQueue<K>(limit: number, work: (key: K) => Promise<void>, onError: (err: unknown, key: K) => void) {
  const waiting: K[] = [];
  const queued = new Set<K>();
  let active = 0;
  let idleWaiters: (() => void)[] = [];

  function pump(): void {
    while (active < limit && waiting.length > 0) {
      const key = waiting.shift()!;
      active++;
      void work(key)
        .catch((err: unknown) => onError(err, key))
        .finally(() => {
          queued.delete(key);
          active--;
          pump();
          if (active === 0 && waiting.length === 0) {
            for (const w of idleWaiters) w();
            idleWaiters = [];
          }
        });
    }
  }

  return {
    push(key: K): void {
      if (queued.has(key)) return;
      queued.add(key);
      waiting.push(key);
      pump();
    },
    has: (key: K) => queued.has(key),
    size: () => queued.size,
    idle: (): Promise<void> => (active === 0 && waiting.length === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
  };
}
