import type { FaceMeasurements } from './types.js';

// Messages between the daemon's thread (checker.ts) and the check's worker (worker.ts).

export interface CheckRequest {
  id: number;
  bytes: Uint8Array;
}

/** The worker posts its replies in arrays, several at once in a burst (worker.ts says why). */
export type CheckReply =
  | { id: number; measurements: FaceMeasurements }
  /** undecodable: the image itself (sharp could not read it); unavailable: the detector (model, runtime). */
  | { id: number; error: string; kind: 'undecodable' | 'unavailable' };

export interface WorkerData {
  modelDir: string;
  /** Lowest detector scores of the two passes. */
  nearScore: number;
  farScore: number;
}
