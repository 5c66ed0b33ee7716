import { Counter, Gauge, Histogram, type Registry } from '../metrics/prom.js';

// Face sync metrics on the Registry the daemon gives us (never prom-client's global one). When a
// metric of the same name is already there (a second FaceSync after a reload) it is reused.

export type SyncResult = 'ok' | 'partial' | 'error' | 'auth_error';

export interface FaceMetrics {
  syncDone(result: SyncResult, seconds: number): void;
  imageRequest(): void;
  cached(n: number): void;
  skipped(reason: string, n: number): void;
}

/** Read at scrape time (the alert rules in contrib/prometheus/ use them). */
export interface FaceSyncLive {
  consecutiveFailures(): number;
  intervalSeconds(): number;
  /** True while face sync is stopped by a refused credential. */
  credentialsRefused(): boolean;
  /** Seconds since the longest-unchecked cached image was last asked for (0 with none cached). */
  oldestCheckAgeSeconds?(): number;
}

export function createFaceMetrics(registry: Registry | undefined, live?: FaceSyncLive): FaceMetrics {
  const registers = registry ? [registry] : [];
  const reuse = <T>(name: string, make: () => T): T => (registry?.getSingleMetric(name) as T | undefined) ?? make();
  const total = reuse('terminal_agent_face_sync_total', () => new Counter({
    name: 'terminal_agent_face_sync_total',
    help: 'Face syncs by result: ok, partial (some images failed), error (nothing changed), auth_error (credentials refused)',
    labelNames: ['result'] as const,
    registers,
  }));
  const duration = reuse('terminal_agent_face_sync_duration_seconds', () => new Histogram({
    name: 'terminal_agent_face_sync_duration_seconds',
    help: 'Duration of face syncs, failed ones included',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers,
  }));
  const cachedGauge = reuse('terminal_agent_faces_cached', () => new Gauge({
    name: 'terminal_agent_faces_cached',
    help: 'Faces in the local cache (with their image)',
    registers,
  }));
  const images = reuse('terminal_agent_face_image_requests_total', () => new Counter({
    name: 'terminal_agent_face_image_requests_total',
    help: 'GET /faces/{face_id}/image requests sent by face sync',
    registers,
  }));
  if (live) {
    const liveGauge = (name: string, help: string, value: () => number) => reuse(name, () => new Gauge({
      name, help, registers,
      collect() {
        this.set(value());
      },
    }));
    liveGauge('terminal_agent_face_sync_consecutive_failures', 'Face syncs failed in a row (0 after a successful one)', live.consecutiveFailures);
    liveGauge('terminal_agent_face_sync_interval_seconds', 'faces.sync_interval: how often face sync runs when it succeeds', live.intervalSeconds);
    if (live.oldestCheckAgeSeconds) {
      liveGauge('terminal_agent_face_recheck_oldest_age_seconds', 'Age of the oldest image re-check: how far the re-checks have come round the group (a replaced image waits at most about this)', live.oldestCheckAgeSeconds);
    }
    reuse('terminal_agent_credentials_refused', () => new Gauge({
      name: 'terminal_agent_credentials_refused',
      help: '1 while a component is stopped because the service refused the credentials (fix them, then reload)',
      labelNames: ['component'] as const,
      registers,
      collect() {
        this.set({ component: 'faces' }, live.credentialsRefused() ? 1 : 0);
      },
    }));
  }
  const skippedRecords = reuse('terminal_agent_face_records_skipped_total', () => new Counter({
    name: 'terminal_agent_face_records_skipped_total',
    help: 'Records of GET /faces left out as malformed (the other faces still sync), by reason',
    labelNames: ['reason'] as const,
    registers,
  }));
  return {
    skipped(reason, n) {
      skippedRecords.inc({ reason }, n);
    },
    syncDone(result, seconds) {
      total.inc({ result });
      duration.observe(seconds);
    },
    imageRequest() {
      images.inc();
    },
    cached(n) {
      cachedGauge.set(n);
    },
  };
}
