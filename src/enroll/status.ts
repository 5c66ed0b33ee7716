import { Counter, Gauge, Histogram, type Registry } from '../metrics/prom.js';
import type { OutboxStore } from './outbox-store.js';
import { KINDS, type EnrollmentStatus, type FailureSummary, type Kind, type KindStatus } from './types.js';

// What `status` and /metrics show about the outbox: the database is the truth, so both read it.

const IN_FLIGHT = new Set(['sending', 'unknown', 'resolving', 'training']);
const RECENT_FAILURES = 10;

export function outboxStatus(store: OutboxStore): { kinds: Record<Kind, KindStatus>; recent_failures: FailureSummary[] } {
  const now = Date.now();
  const kinds = Object.fromEntries(KINDS.map((k) => [k, { queued: 0, in_flight: 0, done: 0, failed: 0, oldest_waiting_ms: null }])) as Record<Kind, KindStatus>;
  for (const c of store.counts()) {
    const k = kinds[c.kind];
    if (!k) continue;
    if (c.state === 'queued') k.queued += c.n;
    else if (IN_FLIGHT.has(c.state)) k.in_flight += c.n;
    else if (c.state === 'done') k.done += c.n;
    else if (c.state === 'failed') k.failed += c.n;
    if (c.oldest !== null) k.oldest_waiting_ms = Math.max(k.oldest_waiting_ms ?? 0, now - c.oldest);
  }
  const recent_failures = store.recentFailures(RECENT_FAILURES).map((r) => ({
    kind: r.kind,
    name: r.name,
    file: r.source_path,
    error: r.last_error ?? '',
    code: r.last_error_code ?? '',
    at: new Date(r.updated_at).toISOString(),
  }));
  return { kinds, recent_failures };
}

export interface EnrollMetrics {
  finished(kind: Kind, result: 'done' | 'failed' | 'duplicate'): void;
  attempt(kind: Kind, outcome: 'ok' | 'retry' | 'error', seconds: number): void;
}

/** The outbox's pace (pipeline-depth.ts): agent.db's typical WAL sync and the depth taken from it. */
export interface PipelinePace {
  syncMs(): number;
  depth(): number;
}

export function registerEnrollMetrics(registry: Registry | undefined, status: () => EnrollmentStatus, pace: PipelinePace): EnrollMetrics {
  if (!registry) return { finished: () => undefined, attempt: () => undefined };
  const registers = [registry];
  // A reload may build a new Enrollment on the same registry: the new one takes the names over.
  for (const name of ['terminal_agent_enroll_files_total', 'terminal_agent_enroll_upload_seconds', 'terminal_agent_enroll_outbox',
    'terminal_agent_enroll_oldest_waiting_seconds', 'terminal_agent_enroll_settling_files', 'terminal_agent_db_sync_seconds',
    'terminal_agent_enroll_pipeline_depth']) registry.removeSingleMetric(name);
  const files = new Counter({ name: 'terminal_agent_enroll_files_total', help: 'Enrollment files finished, by kind and result', labelNames: ['kind', 'result'], registers });
  const attempts = new Histogram({
    name: 'terminal_agent_enroll_upload_seconds', help: 'Upload attempts of enrollment files, by kind and outcome', labelNames: ['kind', 'outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers,
  });
  new Gauge({
    name: 'terminal_agent_enroll_outbox', help: 'Files in the enrollment outbox, by kind and state (queued, in_flight, done, failed)', labelNames: ['kind', 'state'], registers,
    collect() {
      const s = status();
      for (const k of KINDS) {
        const ks = s.kinds[k];
        for (const state of ['queued', 'in_flight', 'done', 'failed'] as const) this.set({ kind: k, state }, ks[state]);
      }
    },
  });
  new Gauge({
    name: 'terminal_agent_enroll_oldest_waiting_seconds', help: 'Age of the oldest enrollment file not yet done or failed', labelNames: ['kind'], registers,
    collect() {
      const s = status();
      for (const k of KINDS) this.set({ kind: k }, (s.kinds[k].oldest_waiting_ms ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'terminal_agent_enroll_settling_files', help: 'Files seen in the enrollment folders and not yet stable', registers,
    collect() {
      this.set(status().settling);
    },
  });
  // A terminal whose SD card flushes slowly (or is wearing out) shows here before it shows as a backlog.
  new Gauge({
    name: 'terminal_agent_db_sync_seconds', help: 'Typical time of one agent.db WAL sync (a moving average of the recent ones)', registers,
    collect() {
      this.set(pace.syncMs() / 1000);
    },
  });
  new Gauge({
    name: 'terminal_agent_enroll_pipeline_depth', help: 'How many times its fast-disk windows the outbox works ahead of its uploads, from the WAL sync time', registers,
    collect() {
      this.set(pace.depth());
    },
  });
  return {
    finished: (kind, result) => files.inc({ kind, result }),
    attempt: (kind, outcome, seconds) => attempts.observe({ kind, outcome }, seconds),
  };
}
