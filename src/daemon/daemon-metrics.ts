import { Counter, Gauge, Histogram, Registry } from '../metrics/prom.js';
import type { RequestEvent } from '../client/types.js';
import type { StateQueries } from './state-queries.js';
import type { DiskReading } from '../disk/disk-floor.js';
import { registerDiskGauges } from '../disk/disk-metrics.js';

// The daemon's own Registry lives as long as the process: process figures, HTTP exchanges (fed by
// the service client's onRequest, which survives client rebuilds on reload), and outbox/sync
// figures read from agent.db at scrape time. Components register theirs on a Registry of their own
// generation (rebuilt on reload, so a metric is never registered twice); /metrics serves both.

export interface DaemonMetrics {
  registry: Registry;
  onRequest(event: RequestEvent): void;
  reloads: Counter<'result'>;
  watchdogWithheld: Counter;
  /** Event-stream clients disconnected for not reading (sse.ts). */
  eventClientsDropped: Counter;
  /** This registry's and `others`' metrics as one document; the first call starts the process metrics. */
  scrape(others: readonly Registry[]): Promise<{ contentType: string; text: string }>;
}

export function createDaemonMetrics(options: { version: string; queries: () => StateQueries | undefined; eventClients?: () => number; disk?: () => DiskReading | undefined }): DaemonMetrics {
  const registry = new Registry();
  new Gauge({ name: 'terminal_agent_info', help: 'Agent version (value is always 1).', labelNames: ['version'], registers: [registry] }).set({ version: options.version }, 1);
  const requests = new Counter({
    name: 'terminal_agent_http_requests_total',
    help: 'HTTP exchanges with the cloud service, by operation and outcome (ok, error, retry).',
    labelNames: ['operation', 'outcome', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'terminal_agent_http_request_duration_seconds',
    help: 'Duration of HTTP exchanges with the cloud service.',
    labelNames: ['operation'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const reloads = new Counter({ name: 'terminal_agent_reloads_total', help: 'SIGHUP reloads, by result (applied, rejected).', labelNames: ['result'], registers: [registry] });
  const watchdogWithheld = new Counter({ name: 'terminal_agent_watchdog_withheld_total', help: 'Watchdog ticks where a component made no progress.', registers: [registry] });
  new Gauge({
    name: 'terminal_agent_outbox_items',
    help: 'Outbox rows by kind and state (queued, sending, unknown, training, done, failed).',
    labelNames: ['kind', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, states] of Object.entries(options.queries()?.outbox() ?? {})) {
        for (const [state, n] of Object.entries(states)) this.set({ kind, state }, n);
      }
    },
  });
  new Gauge({
    name: 'terminal_agent_face_last_ok_sync_timestamp_seconds',
    help: 'Unix time of the last successful face sync (0: none yet).',
    registers: [registry],
    collect() {
      this.set((options.queries()?.lastOkSyncAt() ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'terminal_agent_faces_cached_count',
    help: 'Face records in the local cache.',
    registers: [registry],
    collect() {
      this.set(options.queries()?.cachedFaces() ?? 0);
    },
  });
  const eventClientsDropped = new Counter({ name: 'terminal_agent_event_clients_dropped_total', help: 'Event-stream clients (GET /events) disconnected because they stopped reading.', registers: [registry] });
  new Gauge({
    name: 'terminal_agent_event_clients',
    help: 'Clients connected to the event stream (GET /events).',
    registers: [registry],
    collect() {
      this.set(options.eventClients?.() ?? 0);
    },
  });
  if (options.disk) registerDiskGauges(registry, options.disk);
  let processMetrics: Promise<void> | undefined;
  return {
    registry,
    reloads,
    watchdogWithheld,
    eventClientsDropped,
    onRequest(e) {
      requests.inc({ operation: e.operation, outcome: e.outcome, status: e.status === undefined ? 'none' : String(e.status) });
      duration.observe({ operation: e.operation }, e.durationMs / 1000);
    },
    async scrape(others) {
      processMetrics ??= startProcessMetrics(registry);
      await processMetrics;
      return scrape([registry, ...others]);
    },
  };
}

/**
 * Standard names (process_*, nodejs_*) so stock Node dashboards work, started by the first scrape:
 * they cost an idle daemon that nobody scrapes (metrics.listen is off by default) node:v8, an
 * event-loop delay histogram and its timer, and a GC observer. The first scrape reads the process
 * figures as usual; the event-loop and GC histograms count from then on. The delay histogram
 * samples every 10 ms by default, which would wake an idle daemon 100 times a second.
 */
async function startProcessMetrics(registry: Registry): Promise<void> {
  const { collectDefaultMetrics } = await import('../metrics/prom-defaults.js');
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 500 });
}

/** One Prometheus text document from several registries (names never overlap by construction). */
export async function scrape(registries: readonly Registry[]): Promise<{ contentType: string; text: string }> {
  const parts = await Promise.all(registries.map((r) => r.metrics()));
  return { contentType: Registry.PROMETHEUS_CONTENT_TYPE, text: parts.filter((p) => p.trim()).join('\n') };
}
