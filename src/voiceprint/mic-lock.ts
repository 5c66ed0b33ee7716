import { AbortedError, BusyError } from '../errors.js';

// One owner of the microphone at a time. ALSA would let a second arecord open a shared `default`
// device and both recordings would then hold half of the samples, or refuse a hw: device with a
// vague "busy"; so the agent queues its own recordings, first come first served, for a bounded
// time, and says who holds the microphone when it gives up.

export interface MicLock {
  /** Resolves with the release function once this caller owns the microphone. */
  acquire(who: string, signal?: AbortSignal): Promise<() => void>;
  waiting(): number;
  /** Refuses every waiter and every later acquire. */
  close(reason: string): void;
}

interface Waiter {
  who: string;
  grant: (release: () => void) => void;
  refuse: (err: Error) => void;
}

export function createMicLock(maxWaitMs: number): MicLock {
  let owner: { who: string; since: number } | undefined;
  let closed: string | undefined;
  const queue: Waiter[] = [];

  function releaseFor(who: string): () => void {
    let done = false;
    owner = { who, since: performance.now() };
    return () => {
      if (done) return;
      done = true;
      owner = undefined;
      const next = queue.shift();
      if (next) next.grant(releaseFor(next.who));
    };
  }

  function busy(who: string): BusyError {
    const holder = owner ? `'${owner.who}' has been recording for ${((performance.now() - owner.since) / 1000).toFixed(0)} s` : 'another recording holds it';
    return new BusyError(`the microphone is in use (${holder}); the enrollment of '${who}' waited ${maxWaitMs / 1000} s: try again when it has finished`, { details: { holder: owner?.who } });
  }

  return {
    acquire(who, signal) {
      if (closed) return Promise.reject(new BusyError(`cannot record '${who}': ${closed}`));
      if (signal?.aborted) return Promise.reject(new AbortedError(`the enrollment of '${who}' was cancelled before it started`));
      if (!owner) return Promise.resolve(releaseFor(who));
      if (maxWaitMs <= 0) return Promise.reject(busy(who));
      return new Promise((resolve, reject) => {
        const leave = (err: Error) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          const i = queue.indexOf(waiter);
          if (i >= 0) queue.splice(i, 1);
          reject(err);
        };
        const onAbort = () => leave(new AbortedError(`the enrollment of '${who}' was cancelled while waiting for the microphone`));
        const timer = setTimeout(() => leave(busy(who)), maxWaitMs);
        const waiter: Waiter = {
          who,
          grant: (release) => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            resolve(release);
          },
          refuse: leave,
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        queue.push(waiter);
      });
    },
    waiting: () => queue.length,
    close(reason) {
      closed = reason;
      for (const w of [...queue]) w.refuse(new BusyError(`cannot record '${w.who}': ${reason}`));
    },
  };
}
