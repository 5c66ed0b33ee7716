import type { WalSyncer } from '../db/wal-sync.js';
import type { FaceSeed } from './seed-pass.js';
import type { RecheckStatus } from './recheck-pacer.js';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Db } from '../db/database.js';
import type { FaceRecord, ServiceClient, SkipReason } from '../client/types.js';
import type { BackoffPolicy } from '../util/backoff.js';
import type { EventPublisher } from '../events/event-bus.js';
import type { DiskFloor, MinFree } from '../disk/disk-floor.js';

/** The slice of AgentConfig face sync reads (structurally a subset of AgentConfig). */
export interface FaceSyncConfig {
  state_dir: string;
  /** The free space kept on state_dir's file system (src/disk/disk-floor.ts); auto when absent. */
  state_min_free?: MinFree;
  /** Sizes the deadline of a whole pass (faceSyncDeadlineMs); the defaults' when absent. */
  service?: { request_timeout: number; retries: number };
  faces: {
    /** ms between syncs. */
    sync_interval: number;
    /** ms after which a cached image goes first among the re-checks (recheck.ts), and a download kept from a failed sync is asked about again (image-fetch.ts). */
    image_recheck_interval: number;
    download_concurrency: number;
    /** Re-check budgets (recheck-pacer.ts); the defaults when absent. */
    recheck_requests_per_minute?: number;
    recheck_bytes_per_hour?: number;
  };
}

export interface FaceSyncDeps {
  config: FaceSyncConfig;
  db: Db;
  client: ServiceClient;
  logger: Logger;
  metrics?: Registry;
  /** `faces.synced`, `faces.sync.failed` and `faces.sync.progress` go here (events/). */
  events?: EventPublisher;
  /** ms epoch clock, injectable for image recheck tests. */
  now?: () => number;
  /** Backoff after failed syncs; default 5 s doubling, capped at max(sync_interval, 30 s). */
  backoff?: BackoffPolicy;
  /**
   * How long an image file the index no longer names is kept, ms (default 60 s): a reader that
   * read the previous index a moment ago can still open what it names.
   */
  deleteGraceMs?: number;
  /** The free-space floor; default: one from config.state_dir and config.state_min_free. */
  disk?: DiskFloor;
  /** Longest one sync pass may take before it is cut short, ms (default faceSyncDeadlineMs(config.service)). */
  passDeadlineMs?: number;
  /** Largest image accepted from the server, bytes (default 32 MB). */
  maxImageBytes?: number;
  /** Downloads kept from a failed sync older than this are dropped, ms (default 24 h). */
  stagingMaxAgeMs?: number;
  /** Most image re-checks one sync sends, over the budget's allowance (recheck-pacer.ts); tests. */
  maxRechecksPerPass?: number;
  /** uniform [0, 1) that spreads first re-check times; injectable for tests. */
  random?: () => number;
  /**
   * The sync loop's first sync waits for this (the daemon: until it has told systemd READY=1, which
   * does not wait for a sync); start() and its cache repair do not.
   */
  firstSyncAfter?: Promise<void>;
  /** The connection's WAL syncer, shared with the outbox (db/wal-sync.ts); default: one of its own, closed by stop(). */
  walSyncer?: WalSyncer;
}

/** A face as the cache serves it: the service's record plus its image file. */
export interface CachedFace extends FaceRecord {
  /** File name under `<state_dir>/faces/` (as in index.json). */
  image: string;
  image_sha256: string;
  image_bytes: number | null;
  updated_at: string;
}

/** One entry of `<state_dir>/faces/index.json`; `image` is relative to the folder of index.json. */
export interface IndexEntry extends FaceRecord {
  image: string;
}

export interface SyncErrorInfo {
  code: string;
  message: string;
  /** sysexits code the CLI exits with for this error. */
  exit_code: number;
  status?: number;
}

export interface FaceFailure {
  face_id: string;
  name: string;
  code: string;
  message: string;
}

export type SyncReason = 'start' | 'interval' | 'retry' | 'manual' | 'refresh' | 'reload';

export interface SyncReport {
  reason: SyncReason;
  ok: boolean;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  added: number;
  updated: number;
  removed: number;
  /** Faces whose image could not be used this time (kept as they were, or left out if new). */
  failed: number;
  /** GET /faces/{id}/image requests sent by this sync. */
  image_requests: number;
  /** True when index.json was rewritten. */
  changed: boolean;
  faces_cached: number;
  error: SyncErrorInfo | null;
  failures: FaceFailure[];
  /** Records of the listing left out as malformed (the good ones synced), by reason. */
  skipped: number;
  skipped_reasons: Partial<Record<SkipReason, number>>;
  /** The first few skipped records, in words (`record 3 has no string name`). */
  skipped_records: string[];
}

export type FaceSyncState = 'idle' | 'syncing' | 'backoff' | 'auth_failed' | 'stopped';

export interface FaceSyncStatus {
  state: FaceSyncState;
  faces_cached: number;
  last_sync: Omit<SyncReport, 'failures'> | null;
  last_success_at: string | null;
  next_sync_at: string | null;
  consecutive_failures: number;
  /** The most recent failure, kept after later syncs succeed (`at` tells when). */
  last_error: (SyncErrorInfo & { at: string | null }) | null;
  /** Faces whose last image fetch failed (at most 20). */
  failed_faces: FaceFailure[];
  index_file: string;
  /** Version of the index.json on disk (cache-files.ts indexVersion); null before start(). */
  index_version: string | null;
  /** How far image re-checks have come round the group, and what the budget allows (recheck-pacer.ts). */
  rechecks: RecheckStatus;
}

export interface FaceSync {
  /** Checks the cache on disk, then syncs at once and every sync_interval. Returns without waiting for the network. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Syncs now; joins the running sync if there is one. Never rejects: failures are in the report. */
  syncNow(reason?: SyncReason): Promise<SyncReport>;
  /** Re-fetches one face's record and image at once (after this agent created or updated it). */
  refreshFace(faceId: string): Promise<SyncReport>;
  /** Puts a face this agent uploaded into the cache from the bytes it sent; re-checked by the next sync. */
  seedFace(seed: FaceSeed): Promise<SyncReport>;
  /** Clears a credentials stop and the backoff, applies a new client/config, and syncs at once. */
  reload(update?: { client?: ServiceClient; faces?: FaceSyncConfig['faces'] }): void;
  status(): FaceSyncStatus;
  listCached(): CachedFace[];
  /** An object that changes (identity) whenever listCached() may answer differently. */
  cacheVersion(): object;
  /** One face of listCached(), or undefined when it is not served. */
  cachedFace(faceId: string): CachedFace | undefined;
}
