import type { FaceCheckRecord } from './face-check-step.js';
import type { FaceChecker } from '../facecheck/index.js';
import type { WalSyncer } from '../db/wal-sync.js';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger.js';
import type { Db } from '../db/database.js';
import type { FaceRecord, ServiceClient } from '../client/types.js';
import type { BackoffPolicy } from '../util/backoff.js';
import type { AgentConfig } from '../config/schema.js';
import type { EventPublisher } from '../events/event-bus.js';
import type { Commit } from './commit-batcher.js';
import type { Applied, UnknownDecision } from './failure.js';
import type { FaceUploader } from './face-uploader.js';
import type { OutboxStore } from './outbox-store.js';
import type { SendGate } from './send-gate.js';

export type EnrollSettings = AgentConfig['enroll'];

/** The slices of AgentConfig that enrollment reads (the daemon may pass the whole config). */
export type EnrollmentConfig = Pick<AgentConfig, 'enroll' | 'state_dir' | 'voiceprint' | 'speaker_training'> & {
  /** request_timeout bounds how long a request whose answer was lost may still be running at the service. */
  service?: Pick<AgentConfig['service'], 'request_timeout'>;
};

export interface EnrollmentDeps {
  config: EnrollmentConfig;
  db: Db;
  client: ServiceClient;
  logger: Logger;
  metrics?: Registry;
  /** `enroll.queued`, `enroll.started`, `enroll.done`, `enroll.failed` go here (events/). */
  events?: EventPublisher;
  /**
   * Called when this agent created or updated a face, so the face cache can take it at once:
   * with `seed`, the listed record and the exact bytes the service accepted (no download needed).
   */
  onFaceChanged?(faceId: string, seed?: FaceSeedImage): void;
  /** The connection's WAL syncer, shared with the face cache (db/wal-sync.ts); default: one of its own, closed by stop(). */
  walSyncer?: WalSyncer;
  /** Retry policy for uploads while the service is unreachable (default 1 s doubling to 60 s). */
  retry?: BackoffPolicy;
  /** How long faces waiting for their id wait for more to gather (default 1 s; dispatcher.ts). */
  resolveWaitMs?: number;
  /** The face check's worker (facecheck/); default: one of its own, stopped by stop(). Unused when enroll.face_check.mode is off. */
  faceChecker?: FaceChecker;
}

/** A face this agent uploaded: its record from the group listing, and the image bytes it sent. */
export interface FaceSeedImage {
  face: Pick<FaceRecord, 'face_id' | 'group_id' | 'id' | 'name'>;
  bytes: Buffer;
  /** The sha256 of `bytes` (hex), as the claim took it. */
  sha256?: string;
}

export const KINDS = ['faces', 'voiceprints', 'speakers', 'knowledge'] as const;
export type Kind = (typeof KINDS)[number];

/** queued -> sending -> (resolving | training) -> done, or failed; unknown = outcome to reconcile. */
export type RowState = 'queued' | 'sending' | 'unknown' | 'resolving' | 'training' | 'done' | 'failed';

export interface OutboxRow {
  id: number;
  kind: Kind;
  name: string;
  source_path: string;
  source_size: number;
  source_mtime_ms: number;
  staged_path: string | null;
  content_sha256: string;
  size: number;
  action: string | null;
  meta_json: string;
  state: RowState;
  attempts: number;
  next_attempt_at: number;
  started_at: number | null;
  last_error: string | null;
  last_error_code: string | null;
  last_status: number | null;
  result_json: string | null;
  final_path: string | null;
  finalized: number;
  created_at: number;
  updated_at: number;
}

/** Per-row facts that only some kinds use, kept as JSON in outbox.meta_json. */
export interface RowMeta {
  /** Speakers: the text spoken in the WAV (from LABEL.txt). */
  text?: string;
  /** Speakers: the companion .txt, relative to enroll.dir, moved along with the WAV. */
  companion?: string;
  /** Faces: the sniffed image type, sent as the part's Content-Type. */
  contentType?: string;
  /** Voiceprints: audio parameters sent with the registration. */
  sampleRate?: number;
  channels?: number;
  /** Faces: ids of faces with this name that existed before the POST (reconciliation). */
  preIds?: string[];
  /** Faces: the face a PUT targets. */
  targetId?: string;
  /** Faces: listings that did not show the created face yet. */
  resolveTries?: number;
  /** Speakers: when training was accepted, and how many polls so far. */
  trainingSince?: number;
  polls?: number;
  /**
   * Speakers: how long the training has been followed, as the sum of the waits between polls and
   * the polls' own time (not the wall clock since trainingSince, which NTP steps: see poll()).
   */
  followedMs?: number;
  /** The inode of the file that was copied: a file put in its place later is not moved as if it were this one. */
  sourceIno?: number;
  /** Set when this row reused the result of an earlier upload of the same content. */
  duplicateOf?: number;
  /** Faces: the face check's verdict and measurements (face-check-step.ts), for the result file. */
  faceCheck?: FaceCheckRecord;
}

export interface KindStatus {
  queued: number;
  in_flight: number;
  done: number;
  failed: number;
  /** Age of the oldest file not yet done or failed, ms; null when none waits. */
  oldest_waiting_ms: number | null;
}

export interface FailureSummary {
  kind: Kind;
  name: string;
  file: string;
  error: string;
  code: string;
  at: string;
}

export interface EnrollmentStatus {
  dir: string;
  running: boolean;
  /** Files seen but not yet stable (still being written). */
  settling: number;
  kinds: Record<Kind, KindStatus>;
  recent_failures: FailureSummary[];
  /** Set while uploads are paused after the service failed (offline, 5xx, 429). */
  paused_until: string | null;
  last_service_error: string | null;
}

export interface Enrollment {
  start(): Promise<void>;
  stop(): Promise<void>;
  status(): EnrollmentStatus;
}

/** What an upload step decided for its row; the dispatcher records it in one transaction. */
export interface StepOutcome {
  state: RowState;
  result?: unknown;
  meta?: RowMeta;
  nextAttemptAt?: number;
  error?: { message: string; code: string; status?: number | undefined } | null;
  /** Runs inside the transaction that records the outcome (registry rows, mirror). */
  commit?(): void;
  /** Runs after the transaction committed. */
  after?(): void;
}

/** An upload step of one kind (dispatcher.ts). */
export interface KindHandler {
  /** With `gated`, the handler calls `gate` itself right before its request (after its durable "sending" commit). */
  upload(row: OutboxRow, signal: AbortSignal, gate: SendGate): Promise<StepOutcome>;
  gated?: boolean;
  ifUnknown(applied: Applied, row: OutboxRow): UnknownDecision;
}

export interface DispatcherDeps {
  commit: Commit;
  store: OutboxStore;
  handlers: Record<Kind, KindHandler>;
  faces: FaceUploader;
  poll(row: OutboxRow, signal: AbortSignal): Promise<StepOutcome>;
  /** Where the original of a finished row goes (results.ts createPlacer). */
  place(row: OutboxRow, failed: boolean): string | null;
  /** A place from `place` that was not recorded: free it again. */
  unplace(row: OutboxRow, rel: string, failed: boolean): void;
  concurrency: number;
  /** The pipeline's depth now (pipeline-depth.ts): uploads started ahead scale with it; 1 unless given. */
  depth?: () => number;
  retry: BackoffPolicy;
  /** How long a request may still be running at the service after we lost sight of it, ms. */
  graceMs: number;
  logger: Logger;
  /** A row reached done/failed (committed); the caller finalizes its files. */
  onFinal(row: OutboxRow): void;
  onAttempt?(kind: Kind, outcome: 'ok' | 'retry' | 'error', seconds: number): void;
  /** An upload of this row is about to be sent (each attempt). */
  onSending?(row: OutboxRow): void;
  /** RESOLVE_WAIT_MS unless given (tests lengthen it, to see the batch rule alone). */
  resolveWaitMs?: number | undefined;
}
