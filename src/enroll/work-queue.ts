// A small de-duplicating work queue: each key is processed once at a time, `limit` keys at once
// (a function: asked each time one could start, so the limit can follow the disk's pace).

export function createWorkQueue<K>(limit: number | (() => number), work: (key: K) => Promise<void>, onError: (err: unknown, key: K) => void) {
  const waiting: K[] = [];
  const queued = new Set<K>();
  let active = 0;
  let idleWaiters: (() => void)[] = [];
  const limitNow = typeof limit === 'number' ? () => limit : limit;

  function pump(): void {
    while (active < limitNow() && waiting.length > 0) {
      const key = waiting.shift()!;
      active++;
      void work(key)
        .catch((err: unknown) => onError(err, key))
        .finally(() => {
          queued.delete(key);
          active--;
          // The next key starts on a later turn of the event loop: a key whose work never waits
          // for I/O (a small file read and hashed on the loop) would otherwise run the queue dry
          // in one turn, and `status` or a control request would wait behind all of it.
          setImmediate(pump);
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

/**
 * Like createWorkQueue, but `work` gets every key waiting (up to `maxBatch`) at once, one batch at
 * a time: what piles up while a batch runs shares the next one (a group commit). `work` returns
 * the keys it could not do, with why.
 */
export function createBatchQueue<K>(maxBatch: number, work: (keys: K[]) => Promise<Map<K, unknown>>, onError: (err: unknown, key: K) => void) {
  let waiting: K[] = [];
  const queued = new Set<K>();
  let running = false;
  const idleWaiters: (() => void)[] = [];

  function pump(): void {
    if (running) return;
    if (waiting.length === 0) {
      for (const w of idleWaiters.splice(0)) w();
      return;
    }
    running = true;
    const batch = waiting.slice(0, maxBatch);
    waiting = waiting.slice(batch.length);
    void work(batch)
      .then((failed) => {
        for (const [key, err] of failed) onError(err, key);
      }, (err: unknown) => {
        for (const key of batch) onError(err, key);
      })
      .finally(() => {
        for (const key of batch) queued.delete(key);
        running = false;
        pump();
      });
  }

  return {
    push(key: K): void {
      if (queued.has(key)) return;
      queued.add(key);
      waiting.push(key);
      // After the current turn: the rows finished by the same commit share one batch.
      if (!running) queueMicrotask(pump);
    },
    has: (key: K) => queued.has(key),
    size: () => queued.size,
    idle: (): Promise<void> => (!running && waiting.length === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
  };
}
