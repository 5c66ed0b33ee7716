// An AbortSignal that aborts when any of its sources does, unlinked from them when done with.
//
// Not AbortSignal.any(): on Node 20 and 24 each call leaves a WeakRef of its composite in every
// source's set of dependants for as long as the source lives (nodejs/node#55351). A component's
// lifetime signal lives as long as the daemon and is linked to short ones several times a minute,
// for years. Here the link is an ordinary listener on each source, removed by dispose().

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
