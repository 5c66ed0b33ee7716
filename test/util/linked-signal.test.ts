import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkedSignal, withLinkedSignal } from '../../src/util/linked-signal.js';
import { wait } from '../../src/util/backoff.js';

// The agent links a component's lifetime signal (it lives as long as the daemon) with short ones
// many times a minute. What a long-lived signal keeps of each link is what the daemon keeps for
// good: AbortSignal.any() kept a WeakRef in the source's set of dependants each time (Node 20).

/** Node's own record of the signals that follow `s` (AbortSignal.any's dependants), if any. */
function dependants(s: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(s).find((k) => k.toString() === 'Symbol(kDependantSignals)');
  return key ? ((s as unknown as Record<symbol, Set<unknown>>)[key]?.size ?? 0) : 0;
}

describe('linkedSignal', () => {
  it('aborts with the reason of the first source to abort, and not again', () => {
    const a = new AbortController();
    const b = new AbortController();
    const link = linkedSignal([a.signal, b.signal]);
    expect(link.signal.aborted).toBe(false);
    b.abort(new Error('b went first'));
    expect(link.signal.aborted).toBe(true);
    expect((link.signal.reason as Error).message).toBe('b went first');
    a.abort(new Error('a later'));
    expect((link.signal.reason as Error).message).toBe('b went first');
    // Once aborted it has let go of both sources.
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
  });

  it('is aborted at once when a source already is', () => {
    const a = new AbortController();
    a.abort('stopping');
    const link = linkedSignal([new AbortController().signal, a.signal]);
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe('stopping');
  });

  it('after dispose, follows its sources no more', () => {
    const a = new AbortController();
    const link = linkedSignal([a.signal]);
    link.dispose();
    link.dispose();
    a.abort();
    expect(link.signal.aborted).toBe(false);
  });

  it('leaves nothing on a long-lived source after 10,000 waits linked to it, as the daemon waits all day', async () => {
    const lifetime = new AbortController();
    for (let i = 0; i < 10_000; i++) {
      const kick = new AbortController();
      const waiting = withLinkedSignal([lifetime.signal, kick.signal], (signal) => wait(60_000, signal));
      kick.abort();
      expect(await waiting).toBe(false);
    }
    expect(getEventListeners(lifetime.signal, 'abort')).toHaveLength(0);
    expect(dependants(lifetime.signal)).toBe(0);
    // The lifetime signal still stops what is linked to it.
    const last = linkedSignal([lifetime.signal, new AbortController().signal]);
    lifetime.abort(new Error('stop'));
    expect(last.signal.aborted).toBe(true);
  });

  it('withLinkedSignal unlinks when its function throws', async () => {
    const a = new AbortController();
    await expect(withLinkedSignal([a.signal], () => Promise.reject(new Error('failed')))).rejects.toThrow('failed');
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
  });
});
