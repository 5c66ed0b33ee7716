import type { Registry } from '../metrics/prom.js';
import type { Logger } from '../log/logger.js';
import type { Db } from '../db/database.js';
import type { AgentConfig } from '../config/schema.js';
import type { ServiceClient } from '../client/types.js';
import type { SayBody, VoiceprintEnrollBody } from '../control/types.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentError, AbortedError, describeError } from '../errors.js';
import { stuckWhileBusy, type ProgressCheck } from './watchdog.js';
import { ENROLL_DIR_RETRY_MS } from '../enroll/retry-interval.js';
import { buildComponents, type Components, type Lifecycle } from './components.js';
import type { SayRequest } from '../audio/speech.js';
import type { EventPublisher } from '../events/event-bus.js';

// One generation of the agent's components, built from one config. The daemon builds one at start
// and a new one on a reload that changes more than the log level; nothing here is module-level.

export interface AgentDeps {
  config: AgentConfig;
  /** The root logger; each component gets `logger.child({ component })`. */
  logger: Logger;
  db: Db;
  client: ServiceClient;
  /** This generation's Registry: components register their terminal_agent_* metrics on it. */
  metrics: Registry;
  /** The daemon's event bus (outlives this generation); components publish what they did on it. */
  events?: EventPublisher;
  /** Environment of the audio child processes (ALSA_CONFIG_PATH, PATH); inherited when absent. */
  env?: NodeJS.ProcessEnv;
  /** How often a component that could not start is tried again, ms (default ENROLL_DIR_RETRY_MS). */
  startRetryMs?: number;
  /** Resolves once the daemon has sent READY=1: the first face sync and the player warm-up wait for it. */
  afterReady?: Promise<void>;
}

export interface Agent {
  readonly metrics: Registry;
  readonly components: Components;
  /** Starts faces, speech, voice, then enrollment (which may call into faces and speech). */
  start(): Promise<void>;
  /** Stops enrollment and voice together, then speech, then faces; each lets in-flight work finish. Safe to call twice. */
  stop(): Promise<void>;
  /** Resumes a face sync stopped by a refused credential (SIGHUP with an unchanged config). */
  resume(): void;
  status(): Record<string, unknown>;
  progressChecks(): ProgressCheck[];
  listFaces(): unknown[];
  /** Changes (identity) whenever listFaces() may answer differently; undefined: not known. */
  facesVersion(): object | undefined;
  /** One cached face, undefined when it is not served. */
  cachedFace(faceId: string): unknown;
  syncFaces(): Promise<unknown>;
  /** Fetches one face's record and image at once (this terminal changed it through the CLI). */
  refreshFace(faceId: string): Promise<unknown>;
  say(body: SayBody, signal?: AbortSignal): Promise<unknown>;
  enrollVoiceprint(body: VoiceprintEnrollBody, signal?: AbortSignal): Promise<unknown>;
}

// A sync or an upload may take long on a slow link; one that has not finished in this long is
// wedged, and only a restart clears it. Far above any request timeout times its retries.
const WEDGED_MS = 30 * 60_000;

export function createAgent(deps: AgentDeps): Agent {
  const { logger } = deps;
  const log = logger.child({ component: 'daemon' });
  const c = buildComponents(deps);
  const order = [
    ['faces', c.faces],
    ['speech', c.speech],
    ['voice', c.voice],
    ['enroll', c.enroll],
  ] as const;
  // Audio hardware is optional on a terminal: a missing sound card must not stop face sync and uploads.
  const optional = new Set(['speech', 'voice']);
  // enroll.dir may live on a USB stick or a share that is not mounted yet: the agent runs without
  // the folders and tries again until they can be used. Nothing is lost meanwhile: files wait
  // where they were dropped, and the start-up scan takes them once the folders are there.
  const retried = new Set(['enroll']);
  const degraded: Record<string, string> = {};
  const retrying = new AbortController();
  const retries: Promise<void>[] = [];
  let started = false;
  let stopping: Promise<void> | undefined;

  async function retryStart(name: string, start: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await sleep(deps.startRetryMs ?? ENROLL_DIR_RETRY_MS, undefined, { signal: retrying.signal });
      } catch {
        return; // stopping
      }
      try {
        await start();
        delete degraded[name];
        deps.events?.publish('component.recovered', { component: name, attempts: attempt + 1 });
        log.info({ component_started: name, attempts: attempt + 1 }, `${name} started after all`);
        return;
      } catch (err) {
        degraded[name] = describeError(err);
        log.debug({ component_failed: name, attempt, err: degraded[name] }, `${name} still cannot start`);
      }
    }
  }

  const missing = (name: string): never => {
    throw new AgentError(`the ${name} component is not part of this build of terminal-agent`, { details: { component: name } });
  };

  return {
    metrics: deps.metrics,
    components: c,
    async start() {
      if (started) return;
      started = true;
      for (const [name, comp] of order) {
        if (!comp?.start) continue;
        try {
          await comp.start();
        } catch (err) {
          if (!optional.has(name) && !retried.has(name)) throw err;
          degraded[name] = describeError(err);
          deps.events?.publish('component.degraded', { component: name, reason: degraded[name], retrying: retried.has(name) });
          if (retried.has(name)) {
            log.error({ err: degraded[name], component_failed: name, retry_ms: deps.startRetryMs ?? ENROLL_DIR_RETRY_MS }, `${name} could not start; the agent runs without it and tries again`);
            retries.push(retryStart(name, () => comp.start!()));
          } else {
            log.error({ err, component_failed: name }, `${name} could not start; the agent runs without it (see terminal-agent doctor)`);
          }
        }
      }
    },
    stop() {
      stopping ??= (async () => {
        retrying.abort();
        await Promise.all(retries);
        const stopOne = async (name: string, comp: Lifecycle | undefined) => {
          if (!comp?.stop) return;
          try {
            await comp.stop();
          } catch (err) {
            log.error({ err, component_failed: name }, `${name} failed while stopping`);
          }
        };
        // Enrollment and voice each let the uploads under way have their answer: at the same time,
        // so that both fit in the daemon's stop bound, and a recording stops at once rather than
        // after the outbox drained. Speech (which voice holds) and faces (which enrollment calls) after.
        await Promise.all([stopOne('enroll', c.enroll), stopOne('voice', c.voice)]);
        await stopOne('speech', c.speech);
        await stopOne('faces', c.faces);
        await c.close();
      })();
      return stopping;
    },
    resume() {
      c.faces?.reload?.();
    },
    status() {
      const out: Record<string, unknown> = {};
      for (const [name, comp] of order) {
        out[name] = comp ? safe(() => comp.status()) : 'missing';
        if (degraded[name]) out[name] = { degraded: degraded[name], ...(out[name] as object) };
      }
      return out;
    },
    progressChecks() {
      const checks: ProgressCheck[] = [];
      if (c.faces) {
        const faces = c.faces;
        checks.push(stuckWhileBusy('face sync', WEDGED_MS, () => faces.status().state === 'syncing'));
      }
      if (c.enroll) {
        const enroll = c.enroll;
        // Uploads in flight with none finishing: the in-flight count never drops to zero.
        const kinds = () => Object.values(enroll.status().kinds);
        checks.push(stuckWhileBusy('uploads', WEDGED_MS, () => kinds().some((k) => k.in_flight > 0), () => kinds().reduce((a, k) => a + k.done + k.failed, 0)));
      }
      return checks;
    },
    listFaces: () => (c.faces ? c.faces.listCached() : missing('faces')),
    facesVersion: () => c.faces?.cacheVersion?.(),
    cachedFace: (faceId: string) => (c.faces ? c.faces.cachedFace(faceId) : missing('faces')),
    syncFaces: () => (c.faces ? c.faces.syncNow('manual') : missing('faces')),
    refreshFace: (faceId: string) => (c.faces?.refreshFace ? c.faces.refreshFace(faceId) : missing('faces')),
    async say(body, signal) {
      if (stopping) throw new AbortedError('the agent is stopping and takes no new work');
      if (!c.speech) return missing('speech');
      const { text, voice, volume_ratio, speed_ratio, pitch_ratio, interrupt } = body;
      return c.speech.say({ text, voice, volume_ratio, speed_ratio, pitch_ratio, interrupt: interrupt === true, ...(signal ? { signal } : {}) } as SayRequest);
    },
    async enrollVoiceprint(body, signal) {
      if (stopping) throw new AbortedError('the agent is stopping and takes no new work');
      if (!c.voice) return missing('voice');
      return c.voice.enroll({ name: body.name, ...(body.seconds !== undefined ? { seconds: body.seconds } : {}), ...(signal ? { signal } : {}) });
    },
  };
}

function safe(fn: () => unknown): unknown {
  try {
    return fn();
  } catch (err) {
    return { error: (err as Error).message };
  }
}

