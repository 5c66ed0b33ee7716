
import { Counter, Gauge, type Registry } from '../metrics/prom.js';
import type { Logger } from '../log/logger.js';
import type { Db } from '../db/database.js';
import type { AgentConfig } from '../config/schema.js';
import type { ServiceClient } from '../client/types.js';
import { AbortedError, BusyError, UsageError, abortReason, isAgentError, describeError } from '../errors.js';
import { encodeWav } from '../audio/wav.js';
import { writeFileAtomic } from '../util/fs-atomic.js';
import { capturePcm } from './capture.js';
import { assertQuality, describeLevels, measurePcm, toJson } from './quality.js';
import { checkWavFile } from './wav-check.js';
import { createVoiceprintRegistry, type VoiceprintRegistry } from './registry.js';
import { createDiskFloor } from '../disk/disk-floor.js';
import { auditDir, checkVoiceprintName, newAuditBase, registerVoiceprintWav, type RegisterOutcome } from './register.js';
import { createMicLock } from './mic-lock.js';
import { pruneVoiceprintAudits } from './audit-retention.js';
import { makeDir } from '../util/make-dir.js';
import type { EventPublisher } from '../events/event-bus.js';
import { createLevelMeter } from './level-meter.js';
import { audioDeviceErrors } from '../audio/speech-metrics.js';
import { withLinkedSignal } from '../util/linked-signal.js';

// Records a person from the terminal's microphone and registers the voiceprint: name checked
// before the microphone opens, one recording at a time, playback paused while it records, the
// quality gate before anything is sent, the WAV and the service's answer kept for audit.

export interface VoiceEnrollDeps {
  config: Pick<AgentConfig, 'voiceprint' | 'audio' | 'state_dir'> & Partial<Pick<AgentConfig, 'state_min_free' | 'service'>>;
  db: Db;
  client: ServiceClient;
  logger: Logger;
  metrics?: Registry;
  /** `voiceprint.level` (about 10 a second while recording), `voiceprint.registered`, `voiceprint.failed`. */
  events?: EventPublisher;
  /** The speech component: playback pauses while the microphone records. */
  playback?: { hold(): Promise<() => void> };
  /** Environment of the recorder child (PATH, ALSA_CONFIG_PATH in tests); the daemon's when absent. */
  env?: NodeJS.ProcessEnv;
  /** How long an enroll waits for the microphone held by another, ms (default 30 s); 0 refuses at once. */
  micWaitMs?: number;
  /** How long past the requested length a recorder may run before it counts as stalled, ms (default 10 s). */
  recorderGraceMs?: number;
  /**
   * How long stop() lets an upload under way wait for the service's answer before cutting it, ms
   * (default service.request_timeout, as the enrollment outbox gives its uploads; else 15 s).
   */
  uploadStopGraceMs?: number;
}

export interface EnrollRequest {
  name: string;
  seconds?: number;
  signal?: AbortSignal;
}

export interface EnrollResult extends RegisterOutcome {
  /** "peak -12 dBFS, level -30 dBFS, speech in 54% of frames" */
  levels: string;
}

export interface VoiceEnroll {
  /** Prunes old audit copies (state_dir/voiceprints/) in the background; enrolling needs no start. */
  start(): Promise<void>;
  enroll(request: EnrollRequest): Promise<EnrollResult>;
  status(): Record<string, unknown>;
  stop(): Promise<void>;
}

export const MIN_SECONDS = 1;
export const MAX_SECONDS = 60;

export function createVoiceEnroll(deps: VoiceEnrollDeps): VoiceEnroll {
  const { config, logger } = deps;
  const registry: VoiceprintRegistry = createVoiceprintRegistry(deps.db);
  const mic = createMicLock(deps.micWaitMs ?? 30_000);
  // The agent's stop ends a recording at once (nothing was sent), but lets an upload under way
  // have its answer, for the same reason a caller's hang-up does (see run()); `cutUploads` ends
  // one only once uploadStopGraceMs has passed, so that the daemon still stops in its bound.
  const stopping = new AbortController();
  const cutUploads = new AbortController();
  const uploadStopGraceMs = deps.uploadStopGraceMs ?? config.service?.request_timeout ?? 15_000;
  const inFlight = new Set<Promise<unknown>>();
  let current: { name: string; phase: 'waiting' | 'recording' | 'checking' | 'uploading'; since: string } | undefined;
  let last: Record<string, unknown> | undefined;
  const totals = { ok: 0, failed: 0 };
  /** One audit pruning at a time; stop() waits for it (the database closes right after). */
  let pruning: Promise<void> = Promise.resolve();
  const prune = () => {
    if (stopping.signal.aborted) return;
    pruning = pruning.then(() => pruneVoiceprintAudits({ stateDir: config.state_dir, registry, logger }))
      .then(() => undefined, (err: unknown) => logger.warn({ err }, 'cannot prune old voiceprint audit copies; trying again after the next enrollment'));
  };

  const registers = deps.metrics ? [deps.metrics] : [];
  const enrollments = new Counter({
    name: 'terminal_agent_voiceprint_enrollments_total',
    help: 'Voiceprint enrollments from the microphone, by outcome',
    labelNames: ['outcome'] as const,
    registers,
  });
  const lastPeak = new Gauge({ name: 'terminal_agent_voiceprint_last_peak_dbfs', help: 'Peak level of the last voiceprint recording, dBFS', registers });
  const deviceErrors = audioDeviceErrors(deps.metrics);
  const recording = new Gauge({ name: 'terminal_agent_voiceprint_recording', help: '1 while the microphone records a voiceprint', registers });

  async function run(req: EnrollRequest): Promise<EnrollResult> {
    // The caller's signal and the agent's stop, unlinked from the agent's once done (linked-signal.ts).
    return req.signal ? withLinkedSignal([stopping.signal, req.signal], (signal) => record(req, signal)) : record(req, stopping.signal);
  }

  async function record(req: EnrollRequest, signal: AbortSignal): Promise<EnrollResult> {
    const name = checkVoiceprintName(req.name);
    const seconds = req.seconds ?? config.voiceprint.seconds;
    if (!Number.isFinite(seconds) || seconds < MIN_SECONDS || seconds > MAX_SECONDS) {
      throw new UsageError(`--seconds must be between ${MIN_SECONDS} and ${MAX_SECONDS}, got ${req.seconds}`);
    }
    if (stopping.signal.aborted) throw new BusyError('the agent is stopping; enroll the voiceprint after it restarts');
    const device = config.audio.input_device;
    const sampleRate = config.voiceprint.sample_rate;

    const releaseMic = await mic.acquire(name, signal);
    let pcm: Buffer;
    try {
      current = { name, phase: 'recording', since: new Date().toISOString() };
      const releasePlayback = deps.playback ? await deps.playback.hold() : undefined;
      recording.set(1);
      logger.info({ name, seconds, device, recorder: config.voiceprint.recorder }, 'recording a voiceprint');
      const events = deps.events;
      const meter = events ? createLevelMeter({ sampleRate, seconds, onLevel: (r) => events.publish('voiceprint.level', { name, ...r, rms_dbfs: finite(r.rms_dbfs), peak_dbfs: finite(r.peak_dbfs) }) }) : undefined;
      try {
        ({ pcm } = await capturePcm({ ...(meter ? { onAudio: (c: Buffer) => meter.push(c) } : {}), recorder: config.voiceprint.recorder, device, sampleRate, seconds, ...(deps.env ? { env: deps.env } : {}), ...(deps.recorderGraceMs !== undefined ? { graceMs: deps.recorderGraceMs } : {}), signal }));
      } finally {
        recording.set(0);
        releasePlayback?.();
      }
    } finally {
      releaseMic();
    }

    current = { name, phase: 'checking', since: new Date().toISOString() };
    const report = measurePcm(pcm, sampleRate);
    const quality = toJson(report);
    if (Number.isFinite(report.peakDbfs)) lastPeak.set(report.peakDbfs);
    const levels = describeLevels(report);
    logger.info({ name, quality }, 'voiceprint recording measured');
    assertQuality(report, { requestedSeconds: seconds, what: `the recording of '${name}'` });

    // The caller hanging up (Ctrl-C of `voiceprint enroll`, a closed control connection) cancels
    // what is not sent yet. Once the upload starts it runs to its end, cut only by the agent's stop:
    // the service may register the voiceprint whatever the caller does, and one the local registry
    // does not list could never be found or deleted (the API has no list call). The agent's stop
    // waits for it too, up to uploadStopGraceMs.
    if (signal.aborted) throw new AbortedError(`voiceprint enrollment of '${name}' cancelled before anything was sent: ${abortReason(signal, 'cancelled')}`);
    current = { name, phase: 'uploading', since: new Date().toISOString() };
    // The recording is kept as the audit copy of what was sent: never into the free-space floor.
    await createDiskFloor(config.state_dir, config.state_min_free ?? 'auto').assertRoom(pcm.length + 44, 'voiceprint recordings');
    await makeDir(auditDir(config.state_dir));
    const wavPath = `${newAuditBase(config.state_dir, name)}.wav`;
    await writeFileAtomic(wavPath, encodeWav({ sampleRate, channels: 1, bitsPerSample: 16 }, pcm));
    // The same check an operator's file gets: what we send must be a WAV we would accept.
    const wav = await checkWavFile(wavPath, { what: 'recording', minSeconds: MIN_SECONDS, maxSeconds: MAX_SECONDS + 1 });
    try {
      const outcome = await registerVoiceprintWav(
        { client: deps.client, registry, stateDir: config.state_dir, model: config.voiceprint.model, logger },
        { name, wav, source: 'enroll', quality, inAuditDir: true, signal: cutUploads.signal },
      );
      return { ...outcome, levels };
    } catch (err) {
      if (!cutUploads.signal.aborted) throw err;
      throw new AbortedError(
        `the agent stopped while the recording of '${name}' was being sent, and the service had not answered within ${uploadStopGraceMs} ms: it may or may not have registered it, and 'voiceprint list' does not show it. `
        + `The recording is kept in ${auditDir(config.state_dir)}; enroll '${name}' again once the agent runs`,
        { cause: err, details: { reason: 'upload-cut-by-stop' } },
      );
    }
  }

  return {
    async enroll(req) {
      const started = performance.now();
      const p = run(req);
      inFlight.add(p);
      try {
        const result = await p;
        totals.ok++;
        enrollments.inc({ outcome: 'ok' });
        deps.events?.publish('voiceprint.registered', { name: result.name, voiceprint_id: result.voiceprint_id, levels: result.levels });
        last = { name: result.name, ok: true, at: new Date().toISOString(), ms: Math.round(performance.now() - started), voiceprint_id: result.voiceprint_id, quality: result.quality, levels: result.levels };
        return result;
      } catch (err) {
        totals.failed++;
        const code = isAgentError(err) ? err.code : 'TA_ERR_FAILURE';
        enrollments.inc({ outcome: outcomeOf(code) });
        if (code === 'TA_ERR_RECORDER') deviceErrors.inc({ role: 'input' });
        last = { name: req.name, ok: false, at: new Date().toISOString(), error: describeError(err), code };
        logger.warn({ name: req.name, code, err: describeError(err) }, 'voiceprint enrollment failed');
        deps.events?.publish('voiceprint.failed', { name: req.name, code, reason: describeError(err) });
        throw err;
      } finally {
        inFlight.delete(p);
        if (inFlight.size === 0) current = undefined;
        prune();
      }
    },

    async start() {
      prune();
    },

    status() {
      return {
        // An upload finishing during the stop shows as 'uploading', so a caller can tell.
        state: current ? current.phase : stopping.signal.aborted ? 'stopped' : 'idle',
        recorder: config.voiceprint.recorder,
        input_device: config.audio.input_device,
        sample_rate: config.voiceprint.sample_rate,
        seconds: config.voiceprint.seconds,
        model: config.voiceprint.model,
        current: current ?? null,
        waiting: mic.waiting(),
        registered: registry.count(),
        totals: { ...totals },
        last: last ?? null,
      };
    },

    async stop() {
      if (!stopping.signal.aborted) stopping.abort(new Error('the agent is stopping'));
      mic.close('the agent is stopping');
      if (current?.phase === 'uploading') logger.info({ name: current.name, grace_ms: uploadStopGraceMs }, 'stopping: waiting for the service to answer the voiceprint upload under way, so that it is listed');
      const cut = setTimeout(() => cutUploads.abort(new Error('the agent is stopping')), uploadStopGraceMs);
      try {
        await Promise.allSettled([...inFlight]);
      } finally {
        clearTimeout(cut);
      }
      await pruning;
    },
  };
}

function outcomeOf(code: string): string {
  switch (code) {
    case 'TA_ERR_AUDIO_QUALITY': return 'quality';
    case 'TA_ERR_RECORDER': return 'recorder';
    case 'TA_ERR_BUSY': return 'busy';
    case 'TA_ERR_ABORTED': return 'aborted';
    case 'TA_ERR_BAD_INPUT': case 'TA_ERR_USAGE': return 'invalid';
    default: return 'service';
  }
}

/** JSON has no -Infinity: digital silence is sent as null. */
function finite(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}
