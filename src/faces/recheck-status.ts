// What `status` shows of image re-checks (recheck-pacer.ts). No imports: the control status types
// (src/control/status-types.ts) and the web console's build share it.

/** conditional: the service answers 304; full: every re-check is a download; unknown: not seen yet. */
export type RecheckMode = 'conditional' | 'full' | 'unknown';

export interface RecheckStatus {
  mode: RecheckMode;
  /** Which budget sets the pace: requests a minute, or (mode full) bytes an hour. */
  paced_by: 'requests' | 'bytes';
  /** The last check of the face checked longest ago: how far the re-checks have come round the group. */
  oldest_check_at: string | null;
  oldest_check_age_s: number | null;
  /** About how long going round the whole group takes at this budget: how stale a replaced image can get. */
  round_s: number | null;
  budget: { requests_per_minute: number; bytes_per_hour: number };
  /** What re-checks cost in the last hour. */
  last_hour: { requests: number; bytes: number };
  /** Faces due at the last pass but left for later passes by the budget. */
  deferred: number;
}
