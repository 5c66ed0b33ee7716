// The JSON the console API answers with (see src/console/). The status shapes are the daemon's
// own; the rest is only what the pages read, and everything else passes through untyped.
import type { AgentStatus, FailureSummary, StatusAction, SyncRunSummary } from '../../src/control/status-types';

// The daemon's own types for GET /status (src/control/status-types.ts: no node module in reach).
export type SyncRun = SyncRunSummary;
export type Failure = FailureSummary;
export type { StatusAction };

/** GET /api/status: the control socket's status, plus what the console can offer to fix. */
export type Status = AgentStatus & { actions?: StatusAction[] };

export interface Face {
  face_id: string;
  name: string;
  thumb_url: string;
  image_url: string;
}

export interface FacesList {
  faces: Face[];
  /** The last sync that succeeded: how fresh the cache is. */
  synced_at: string | null;
  last_sync?: SyncRun | null;
  sync_state?: string | null;
  index_version?: number | string | null;
  total: number;
}

export type EnrollState = 'queued' | 'in_flight' | 'done' | 'failed';

export interface EnrollItem {
  kind: string;
  name: string;
  state: EnrollState;
  size?: number;
  at?: string;
  preview_url?: string;
  media?: 'image' | 'audio' | 'text';
  result?: Record<string, unknown>;
  error?: { code?: string; message: string; hint?: string };
  /** For in_flight: the outbox step (sending, unknown, training...) and the attempts so far. */
  step?: string;
  attempts?: number;
}

export type EnrollList = Record<EnrollState, EnrollItem[]> & { more?: Record<EnrollState, number> };

export interface Voice {
  name: string;
  voice: string;
  language?: string;
  gender?: string;
  provider?: string;
  tags?: string[];
  age?: string;
  description?: string;
}

export interface VoiceprintRow {
  voiceprint_id: string | null;
  name: string;
  source: string;
  seconds: number | null;
  quality: Record<string, unknown> | null;
  created_at: string;
}

export interface SpeakerRow {
  speaker_id: string;
  model: string;
  label: string | null;
  status: number;
  status_text?: string;
  created_at: number | string;
  updated_at: number | string;
}
