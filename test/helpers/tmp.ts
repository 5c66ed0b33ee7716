import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/**
 * A fresh directory under the OS temp dir, removed when the current test finishes (pass or fail).
 * Inside a test or beforeEach it goes when that test ends; called from beforeAll/describe (where
 * vitest has no test to attach to) it goes when the test worker exits. For an explicit lifetime,
 * use `tmpDirManual`.
 */
export function tmpDir(prefix = 'ta-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    onTestFinished(remove);
  } catch {
    process.once('exit', remove);
  }
  return dir;
}

/** A temp dir with an explicit remover, for beforeAll/afterAll scopes where onTestFinished is unavailable. */
export function tmpDirManual(prefix = 'ta-test-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
