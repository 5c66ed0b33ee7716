import { AbortedError } from '../errors.js';

// The request slots of the outbox loop (dispatcher.ts): upload_concurrency requests at the service
// at most, while up to twice as many uploads are started (their durable "sending" commit is made
// while the slot's previous request is still on the wire). Each upload passes a gate right before
// its request leaves; the gate refuses when uploads were paused or stopped meanwhile.

/**
 * Waits for a request slot (upload_concurrency at most on the wire); resolves to its release.
 * Throws NotSentError when uploads were paused or stopped meanwhile: the request must not go.
 */
export type SendGate = () => Promise<() => void>;

/**
 * The gate refused to let a prepared request go (pause or stop): the row goes back to the queue.
 * Never leaves the dispatcher; an AbortedError so that anything else reads it as "not done".
 */
export class NotSentError extends AbortedError {
  constructor() {
    super('the upload was held back before its request left (uploads paused or stopping)');
  }
}

/** `limit` request slots, taken in FIFO order. */
export function createRequestSlots(limit: number) {
  let free = limit;
  const waiters: (() => void)[] = [];

  function acquire(): Promise<void> {
    if (free > 0) {
      free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => waiters.push(resolve));
  }

  function release(): void {
    const next = waiters.shift();
    if (next) next();
    else free++;
  }

  return {
    /** The gate of one upload: `heldBack()` is asked once a slot is free, and a true answer refuses. */
    gateFor(heldBack: () => boolean): SendGate {
      return async () => {
        await acquire();
        let released = false;
        const releaseOnce = () => {
          if (released) return;
          released = true;
          release();
        };
        if (heldBack()) {
          releaseOnce();
          throw new NotSentError();
        }
        return releaseOnce;
      };
    },
  };
}
