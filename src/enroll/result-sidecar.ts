import { join } from 'node:path';
import { splitInner, type Layout } from './layout.js';
import type { Kind } from './types.js';

// Where the web console finds a finished file's result file (NAME.json / NAME.error.json).
// MERGE NOTE: branch `hostile` moves result-file naming into src/enroll/result-files.ts (long names
// are cut and hashed to fit NAME_MAX). When both are merged, replace this function's body with
//   return resultPathFor(layout, kind, state, rel);   // import { resultPathFor } from './result-files.js'
// so that the console and the pipeline share one naming rule. Until then it is results.ts's rule.

export function resultSidecarPath(layout: Layout, kind: Kind, state: 'done' | 'failed', rel: string): string {
  const base = state === 'done' ? layout.done(kind) : layout.failed(kind);
  const suffix = state === 'done' ? '.json' : '.error.json';
  if (kind === 'knowledge') return join(base, `${rel}${suffix}`);
  const { folder, stem } = splitInner(rel);
  return join(base, ...(folder ? folder.split('/') : []), `${stem}${suffix}`);
}
