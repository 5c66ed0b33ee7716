import type { AgentDeps } from './agent.js';
import { createFaceSync } from '../faces/face-sync.js';
import { createSpeech } from '../audio/speech.js';
import { createVoiceEnroll } from '../voiceprint/voice-enroll.js';
import { createEnrollment } from '../enroll/index.js';
import type { SayRequest } from '../audio/speech.js';
import { createWalSyncer } from '../db/wal-sync.js';

// The seam between the daemon and the capabilities: each is built from its factory with its config
// slice, `logger.child({ component })`, the shared db, the service client and this generation's
// metrics Registry. The structural types below are all the daemon relies on.

/**
 * The longest a voiceprint upload under way at a stop may wait for its answer: within the daemon's
 * STOP_BOUND_MS (20 s, daemon.ts), with time left for the answer to reach the control socket's caller.
 */
export const VOICE_UPLOAD_STOP_GRACE_MS = 15_000;

export interface Lifecycle {
  start?(): Promise<void>;
  stop?(): Promise<void>;
  status(): unknown;
}

export interface FacesComponent extends Lifecycle {
  status(): { state: string };
  syncNow(reason?: 'manual'): Promise<unknown>;
  listCached(): unknown[];
  cacheVersion?(): object;
  cachedFace(faceId: string): unknown;
  reload?(update?: unknown): void;
  refreshFace?(faceId: string): Promise<unknown>;
}

export interface EnrollComponent extends Lifecycle {
  status(): { kinds: Record<string, { in_flight: number; done: number; failed: number }> };
}

export interface SpeechComponent extends Lifecycle {
  say(request: SayRequest): Promise<unknown>;
  hold(): Promise<() => void>;
}

export interface VoiceComponent extends Lifecycle {
  enroll(request: { name: string; seconds?: number; signal?: AbortSignal }): Promise<unknown>;
}

export interface Components {
  faces: FacesComponent | undefined;
  enroll: EnrollComponent | undefined;
  speech: SpeechComponent | undefined;
  voice: VoiceComponent | undefined;
  /** Ends what the components share (the WAL's descriptor), once every one has stopped. */
  close(): Promise<void>;
}

export function buildComponents(deps: AgentDeps): Components {
  const { config, logger, db, client, metrics, env, afterReady } = deps;
  const events = deps.events ? { events: deps.events } : {};
  const child = (component: string) => logger.child({ component });
  // Work READY=1 does not promise waits until it has been sent: it would only delay it.
  const later = afterReady ? { firstSyncAfter: afterReady } : {};
  // One WAL syncer for agent.db's connection: a face-cache commit and the outbox's share its syncs.
  const walSyncer = createWalSyncer(db);
  const faces = createFaceSync({ config, db, client, logger: child('faces'), metrics, ...events, ...later, walSyncer });
  const speech = createSpeech({ config, db, client, logger: child('speech'), metrics, ...events, ...(env ? { playerOptions: { env } } : {}), ...(afterReady ? { warmUpAfter: afterReady } : {}) });
  // An upload under way at a stop gets service.request_timeout, as the outbox's do, but never more
  // than VOICE_UPLOAD_STOP_GRACE_MS: its answer must still reach the caller within the daemon's bound.
  const uploadStopGraceMs = Math.min(config.service.request_timeout, VOICE_UPLOAD_STOP_GRACE_MS);
  const voice = createVoiceEnroll({ config, db, client, logger: child('voice'), metrics, ...events, playback: speech, uploadStopGraceMs, ...(env ? { env } : {}) });
  const enroll = createEnrollment({
    config, db, client, logger: child('enroll'), metrics, ...events, walSyncer,
    // A face this agent created or updated goes into the cache at once, not at the next sync: from
    // the bytes it sent when it has them, else downloaded.
    onFaceChanged: (faceId, seed) => void (seed ? faces.seedFace(seed) : faces.refreshFace(faceId)).catch(() => {}),
  });
  return {
    faces,
    enroll,
    speech,
    voice,
    close: async () => {
      await walSyncer.close();
    },
  };
}
