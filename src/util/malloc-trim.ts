import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// The agent's own addon (native/malloc-trim), built by `npm run build` into dist/native/ and by the
// package for its CPU. dist/<dir>/<file>.js and the bundle's chunks (whose import.meta.url is their
// tsc output's, scripts/bundle.mjs) find it one folder up; code run from src/ (the tests) finds it
// in the checkout's dist/.

export interface MallocTrim {
  /** malloc_trim(0): hands glibc's whole free pages back to the kernel; true when it released any. */
  trim(): boolean;
  /**
   * Unmaps this process's clean pages of node's own binary (they stay in the page cache; a page
   * touched later faults back in, the same bytes): bytes of address space advised, 0 when none
   * qualified, -1 when /proc/self/smaps cannot be read (native/malloc-trim/malloc_trim.c).
   */
  releaseNodePages(): number;
}

/** Where the addon may be: beside the running build, else in the checkout's dist/. */
export function mallocTrimCandidates(): string[] {
  return ['../native/malloc_trim.node', '../../dist/native/malloc_trim.node'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
}

/** The addon when it is there and this is glibc; else why not (the daemon runs on without it). */
export function loadMallocTrim(candidates: readonly string[] = mallocTrimCandidates()): { trim: MallocTrim } | { missing: string } {
  const path = candidates.find((p) => existsSync(p));
  if (!path) return { missing: `${candidates[0] ?? 'malloc_trim.node'} is not there: reinstall the package, or run npm run build in a checkout` };
  try {
    const mod = createRequire(import.meta.url)(path) as { trim(): boolean; supported(): boolean; releaseNodePages?: () => number };
    if (!mod.supported()) return { missing: 'the C library is not glibc' };
    // An addon built before releaseNodePages existed (a dist/ not rebuilt) still trims.
    const release = mod.releaseNodePages;
    return { trim: { trim: () => mod.trim(), releaseNodePages: release ? () => release() : () => 0 } };
  } catch (err) {
    return { missing: `${path} does not load: ${(err as Error).message}` };
  }
}
