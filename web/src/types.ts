// The JSON the console API answers with (see the daemon's src/control/types.ts and src/console/).
// Only what the pages read; everything else passes through untyped.

export interface SyncRun {
  started_at: string;
  finished_at: string | null;
  ok: boolean;
  added: number;
  updated: number;
  removed: number;
  failed: number;
  error: string | null;
  error_code: string | null;
}

export interface Failure {
  at: string;
  source: string;
  kind?: string;
  name?: string;
  error: string;
  code?: string | null;
}

export interface StatusAction {
  component: string;
  problem: string;
  fix: string;
  /** A change the console can make at once, e.g. {method: 'POST', path: '/api/faces/sync', label: 'Sync now'}. */
  action?: { method: 'POST'; path: string; label: string };
}

export interface Status {
  version: string;
  pid: number;
  state: string;
  started_at: string;
  uptime_s: number;
  config_file: string | null;
  state_dir: string;
  faces: { cached: number | null; last_sync: SyncRun | null; last_ok_sync_at: string | null };
  outbox: Record<string, Record<string, number>>;
  recent_failures: Failure[];
  audio: { output_device: string; input_device: string; speech: unknown; voice: unknown };
  components: Record<string, unknown>;
  reload: { count: number; last_at: string | null; last_error: string | null };
  watchdog: { enabled: boolean; interval_ms: number | null; last_fed_at: string | null; failing: string[] };
  actions?: StatusAction[];
}

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
