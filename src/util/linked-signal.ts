// An AbortSignal that aborts when any of its sources does, unlinked from them when done with.
//
// Not AbortSignal.any(): on Node 20 each call leaves a WeakRef of its composite in every source's
// set of dependants for as long as the source lives (nodejs/node#55351; a composite that still has
// a listener stays whole, about 1.2 KB). The agent combined a component's lifetime signal, which
// lives as long as the daemon, with a short one (a sync's deadline, a wake-up, a rescan's kick)
// several times a minute, up to twice a second while files arrive: about 85 bytes of V8's heap for
// good each time, some 10 MB a month of an idle terminal that runs for years. Found by the soak of
// a group of 10,000 (heap snapshots 15 minutes apart: +552 WeakRefs). Here the link is an ordinary
// listener on each source, removed by dispose().

export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Removes its listeners from the sources (it no longer follows them). Idempotent. */
  dispose(): void;
}

/** A signal aborted, with that source's reason, by the first of `sources` to abort. */
export function linkedSignal(sources: readonly AbortSignal[]): LinkedSignal {
  const controller = new AbortController();
  const already = sources.find((s) => s.aborted);
  if (already) {
    controller.abort(already.reason);
    return { signal: controller.signal, dispose: () => {} };
  }
  const links = sources.map((source) => {
    const onAbort = () => {
      dispose();
      controller.abort(source.reason);
    };
    source.addEventListener('abort', onAbort, { once: true });
    return [source, onAbort] as const;
  });
  function dispose(): void {
    for (const [source, onAbort] of links) source.removeEventListener('abort', onAbort);
    links.length = 0;
  }
  return { signal: controller.signal, dispose };
}

/** Runs `fn` with a signal linked to `sources`, unlinked when it settles. */
export async function withLinkedSignal<T>(sources: readonly AbortSignal[], fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const link = linkedSignal(sources);
  try {
    return await fn(link.signal);
  } finally {
    link.dispose();
  }
}
