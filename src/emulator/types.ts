import type { Logger } from '../log/logger.js';

// The public surface of the service emulator: what `startEmulator` takes and returns.

export interface TerminalCredential {
  terminal_secret: string;
  group_id: string;
}

/** Which credential the endpoints whose auth the spec does not show (notify, tts, train, voiceprint) demand. */
export type OtherAuth = 'none' | 'terminal_secret' | 'api_key';

/** How POST /tts makes its audio: espeak-ng when installed (auto), always espeak, or a generated tone. */
export type TtsEngine = 'auto' | 'espeak' | 'tone';

export interface EmulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Folder for emulator.db and the stored images/audio; in memory (plus a temp folder) when absent. */
  dataDir?: string;
  /** Made up (one terminal, one group) when absent or empty. */
  terminals?: TerminalCredential[];
  /** Made up when absent. */
  apiKey?: string;
  /** How long a trained speaker stays at status 0 before it turns 1, ms. Default 3000. */
  trainMs?: number;
  tts?: TtsEngine;
  otherAuth?: OtherAuth;
  /** Largest accepted file part, bytes. Default 100 MB; larger gives 413. */
  maxUploadBytes?: number;
  /** Deterministic faults in place from the start. */
  faults?: FaultRule[];
  /** Probabilistic faults in place from the start. */
  chaos?: ChaosSettings;
  /** Keeps at most this many entries in `requests` (oldest dropped). Default 100000. */
  requestLogLimit?: number;
  /**
   * Whether GET /faces/{face_id}/image sends ETag and Last-Modified and answers conditional requests
   * with 304 (default true). False: a service with no validators, every request a full 200.
   */
  validators?: boolean;
  logger?: Logger;
}

/** One request as the emulator saw it. */
export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  /** HTTP status answered; 0 while unanswered, and for a dropped connection. */
  status: number;
  /** Request body bytes read. */
  bytes: number;
  bytesOut: number;
  /** ms epoch of arrival. */
  at: number;
  durationMs: number;
  contentType: string | undefined;
  userAgent: string | undefined;
  /** Which known credential the Authorization header carried (never the value itself). */
  auth: 'none' | 'terminal_secret' | 'api_key' | 'unknown';
  /** The injected fault that shaped the answer, if any. */
  fault?: string;
}

/**
 * What a deterministic fault does to a matching request:
 * - status: answer `status` (with Retry-After when `retryAfter` is set) without running the endpoint;
 * - drop: close the connection at once, before the endpoint runs (the body is not read);
 * - drop-after: run the endpoint (its effect is kept), then close the connection with no answer;
 * - drop-body: run the endpoint, send the headers and half of the body, then close the connection;
 * - truncate: run the endpoint, send half of the body and end the response cleanly (a cut WAV);
 * - json: answer 200 with a JSON body carrying a non-zero code instead of what the endpoint gives;
 * - delay: wait `delayMs`, then answer normally.
 */
export type FaultAction = 'status' | 'drop' | 'drop-after' | 'drop-body' | 'truncate' | 'json' | 'delay';

export interface FaultRule {
  /** Default any method. */
  method?: string;
  /** Full URL path (e.g. /v1/api/faces); `*` matches any run of characters. Default any path. */
  path?: string;
  action: FaultAction;
  status?: number;
  /** Seconds, sent as Retry-After with a status fault. */
  retryAfter?: number;
  /** The delay of a `delay` fault; with another action, how long before it is done. */
  delayMs?: number;
  /** How many matching requests it applies to; default 1; Infinity for all. */
  times?: number;
}

export interface FaultRuleState {
  id: string;
  rule: FaultRule;
  remaining: number;
  hits: number;
}

/** Probabilistic faults for benchmarks; shares are fractions 0..1 of all requests. */
export interface ChaosSettings {
  /** Added to every answer, ms. */
  latencyMs?: number;
  /** Extra random latency in [0, jitter), ms. */
  latencyJitterMs?: number;
  /** Share answered 503 (alternating 500 and 503). */
  errorRate?: number;
  /** Share answered 429 with Retry-After. */
  throttleRate?: number;
  /** Retry-After seconds sent with 429/503 chaos answers. Default 1. */
  retryAfter?: number;
  /** Share whose connection is closed with no answer. */
  dropRate?: number;
  /** Response bodies sent at this many bytes per second. */
  slowBodyBytesPerSec?: number;
  /** Seed of the random generator, for repeatable runs. */
  seed?: number;
}

export interface FaultController {
  add(rule: FaultRule): string;
  remove(id: string): boolean;
  /** Removes every rule and resets chaos. */
  clear(): void;
  rules(): FaultRuleState[];
  setChaos(settings: ChaosSettings): void;
  chaos(): ChaosSettings;
}

export interface EmulatorFace {
  face_id: string;
  group_id: string;
  id: number;
  name: string;
}

export interface SeedFace {
  name: string;
  image: Buffer;
}

/** Settings that can change while the emulator runs (PUT /__emulator/settings). */
export interface EmulatorSettings {
  validators: boolean;
}

/** How set_image replaces a face's image. */
export interface SetImageOptions {
  /** Give the face a new `id` with the new image, as a service that re-creates the record would (default false). */
  changeId?: boolean;
}

export interface EmulatorState {
  faces(groupId?: string): EmulatorFace[];
  face(faceId: string): (EmulatorFace & { mime: string; etag: string; size: number }) | undefined;
  faceImage(faceId: string): Buffer | undefined;
  knowledge(): { id: string; title: string | null; content: string }[];
  notifications(): { kind: 'agent' | 'knowledge'; body: unknown; at: number }[];
  speakers(): { speaker_id: string; model: string; audio_text: string; status: number }[];
  voiceprints(): { voiceprint_id: string; name: string; info: Record<string, unknown> }[];
}

export interface Emulator {
  baseUrl: string;
  faceBaseUrl: string;
  host: string;
  port: number;
  terminals: TerminalCredential[];
  apiKey: string;
  /** Every request received (control requests excluded), oldest first. Live: read it after a call. */
  readonly requests: RequestRecord[];
  clearRequests(): void;
  faults: FaultController;
  state: EmulatorState;
  /** Inserts faces straight into the store (one transaction); returns their records. */
  seedFaces(groupId: string, faces: readonly SeedFace[]): EmulatorFace[];
  /**
   * Replaces a face's image as an administrator would in the cloud (no request logged); with
   * `changeId`, the record gets a new `id` too. Returns the record as the listing now shows it.
   */
  setImage(faceId: string, image: Buffer, opts?: SetImageOptions): EmulatorFace;
  /** The settings in force; change them with `configure`. */
  settings(): EmulatorSettings;
  configure(settings: Partial<EmulatorSettings>): EmulatorSettings;
  /** Stops listening, ends open connections, closes the store. Safe to call twice. */
  close(): Promise<void>;
}
