import type { DiskReading } from '../disk/disk-reading.js';
import type { RecheckStatus } from '../faces/recheck-status.js';

// The JSON of GET /status on the control socket (and `status --json`). Its only imports are type
// files without imports, so the web console's build (web/src/types.ts) shares these types.

export interface SyncRunSummary {
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  ok: boolean;
  added: number;
  updated: number;
  removed: number;
  failed: number;
  error: string | null;
  error_code: string | null;
}

export interface FailureSummary {
  at: string;
  source: 'faces' | 'outbox' | 'daemon';
  kind?: string;
  name?: string;
  error: string;
  code?: string | null;
}

export interface AgentStatus {
  version: string;
  pid: number;
  state: 'starting' | 'running' | 'reloading' | 'stopping';
  started_at: string;
  uptime_s: number;
  config_file: string | null;
  state_dir: string;
  faces: {
    cached: number | null;
    last_sync: SyncRunSummary | null;
    last_ok_sync_at: string | null;
    /** How far image re-checks have come round the group; null when face sync is not running. */
    rechecks?: RecheckStatus | null;
  };
  /** Count of outbox rows per kind, then per state (queued, sending, unknown, training, done, failed). */
  outbox: Record<string, Record<string, number>>;
  recent_failures: FailureSummary[];
  audio: {
    output_device: string;
    input_device: string;
    speech: unknown;
    voice: unknown;
  };
  /** Each component's own status(), plus "missing" for one not built into this agent. */
  components: Record<string, unknown>;
  reload: { count: number; last_at: string | null; last_error: string | null };
  watchdog: { enabled: boolean; interval_ms: number | null; last_fed_at: string | null; failing: string[] };
  /** Free space on state_dir's file system against state_min_free; null when it cannot be read. */
  disk?: DiskReading | null;
}

/** One problem the console's GET /api/status adds to the status (src/console/status-actions.ts), with its fix. */
export interface StatusAction {
  component: string;
  problem: string;
  fix: string;
  /** A button the page can offer: the console API call that helps. */
  action?: { method: 'POST'; path: string; label: string };
}
