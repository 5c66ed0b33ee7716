// The outbox loop's sleep between passes (dispatcher.ts): until its timer, a wake() (new rows, a
// step recorded, a slot freed: several per file in a burst) or the abort of the run's signal.
// One abort listener serves the whole run: an EventTarget's listener list is costly to change,
// and there are several sleeps per file in a burst.

export interface LoopWaiter {
  /** Sleeps up to `ms`; true when the timer ended it, false for a wake() or the abort. */
  sleep(ms: number): Promise<boolean>;
  /** Ends the sleep under way, if there is one (else nothing: the next pass reads the outbox anyway). */
  wake(): void;
  /** The sleeps of a run end when `signal` aborts; returns what detaches it when the run ends. */
  attach(signal: AbortSignal): () => void;
}

export function createLoopWaiter(): LoopWaiter {
  let end: ((timedOut: boolean) => void) | undefined;
  const wake = () => end?.(false);
  return {
    sleep(ms: number): Promise<boolean> {
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => done(true), ms);
        function done(timedOut: boolean): void {
          clearTimeout(timer);
          end = undefined;
          resolve(timedOut);
        }
        end = done;
      });
    },
    wake,
    attach(signal: AbortSignal): () => void {
      signal.addEventListener('abort', wake, { once: true });
      return () => signal.removeEventListener('abort', wake);
    },
  };
}
