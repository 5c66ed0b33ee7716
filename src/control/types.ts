import type { SayRequest } from '../audio/speech-types.js';

// The JSON shapes served on the control socket (and printed by `status --json`).

export type { AgentStatus, FailureSummary, SyncRunSummary } from './status-types.js';

/** The JSON of POST /say: the in-process SayRequest without its AbortSignal (the connection is that). */
export type SayBody = Omit<SayRequest, 'signal'> & Record<string, unknown>;

export interface VoiceprintEnrollBody {
  name: string;
  seconds?: number;
  [key: string]: unknown;
}
