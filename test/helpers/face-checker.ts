import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';
import { createFaceChecker, type FaceChecker, type FaceCheckerOptions } from '../../src/facecheck/index.js';

// The face check's worker runs as built (dist/facecheck/worker.js: a worker thread cannot load
// the TypeScript source); `npm test` builds first.

export const WORKER_URL = new URL('../../dist/facecheck/worker.js', import.meta.url);
export const FACES_DIR = fileURLToPath(new URL('../fixtures/faces/', import.meta.url));

/** A checker with the built worker, stopped after the test. */
export function testFaceChecker(opts: FaceCheckerOptions = {}): FaceChecker {
  if (!opts.workerUrl && !existsSync(WORKER_URL)) throw new Error(`${fileURLToPath(WORKER_URL)} is missing: run npm run build first`);
  const checker = createFaceChecker({ workerUrl: WORKER_URL, ...opts });
  onTestFinished(() => checker.stop());
  return checker;
}

/** A labelled image of test/fixtures/faces/. */
export const faceImage = (name: string): Buffer => readFileSync(`${FACES_DIR}${name}`);

/** test/fixtures/faces/labels.json: file name -> the verdict a person would give (ok or the problem). */
export const faceLabels = (): Record<string, string> => JSON.parse(readFileSync(`${FACES_DIR}labels.json`, 'utf8')) as Record<string, string>;
