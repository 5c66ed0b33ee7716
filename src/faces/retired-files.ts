import type { CacheFiles } from './cache-files.js';
import type { FaceStore } from './face-store.js';

/**
 * Image files a sync dropped from index.json. A reader that loaded the previous index may still
 * open them, so each is kept for a grace period after it was retired, then deleted, unless a row
 * names the file again by then (a face whose image went jpg -> png -> jpg).
 */
export function createRetiredFiles(deps: { files: CacheFiles; store: FaceStore; graceMs: number; now: () => number }) {
  let retired: Array<{ file: string; at: number }> = [];
  return {
    add(names: readonly string[]): void {
      const at = deps.now();
      for (const file of names) retired.push({ file, at });
    },
    /** Deletes the files whose grace is over. */
    async removeDue(): Promise<void> {
      const now = deps.now();
      const due = retired.filter((r) => now - r.at >= deps.graceMs);
      if (due.length === 0) return;
      retired = retired.filter((r) => now - r.at < deps.graceMs);
      const files = due.map((r) => r.file);
      const named = deps.store.namedAmong(files);
      await deps.files.removeFiles(files.filter((f) => !named.has(f)));
    },
  };
}
