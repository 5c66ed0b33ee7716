import type { ServiceClient } from '../client/types.js';
import { ServiceError } from '../errors.js';
import { createVoiceprintRegistry } from '../voiceprint/registry.js';
import type { Db } from '../db/database.js';
import type { Applied } from './failure.js';
import type { Commit } from './commit-batcher.js';
import type { OutboxStore } from './outbox-store.js';
import { parseMeta } from './outbox-store.js';
import { createSpeakerRegistry } from './speaker-registry.js';
import type { EnrollmentConfig, OutboxRow, StepOutcome } from './types.js';

// Voiceprints and speakers: the API can neither list nor look these up by name, so a request whose
// outcome is unknown cannot be settled. Sending it again could register the same voice twice; the
// file goes to failed/ with TA_ERR_OUTCOME_UNKNOWN and the operator decides.

const POLL_CAP_MS = 30_000;

function wavUpload(row: OutboxRow) {
  return { path: row.staged_path!, filename: `${row.name}.wav`, contentType: 'audio/wav' };
}

function failUnknownOutcome(applied: Applied): 'retry' | 'fail' {
  return applied === 'unknown' ? 'fail' : 'retry';
}

export function createVoiceprintUploader(deps: { client: ServiceClient; store: OutboxStore; commit: Commit; db: Db; config: EnrollmentConfig }) {
  const registry = createVoiceprintRegistry(deps.db);
  return {
    async upload(row: OutboxRow, signal: AbortSignal): Promise<StepOutcome> {
      const meta = parseMeta(row);
      await deps.commit(() => deps.store.startAttempt(row.id, 'register', meta), { durable: true });
      const model = deps.config.voiceprint.model;
      const res = await deps.client.registerVoiceprint(
        { name: row.name, audio: wavUpload(row), sampleRate: meta.sampleRate, channel: meta.channels, model, format: 'wav' },
        { signal, retries: 0 },
      );
      return {
        state: 'done',
        result: { voiceprint_id: res.voiceprint_id ?? null, voiceprint_info: res.voiceprint_info, model },
        // registry.add nests as a savepoint inside the outcome's transaction.
        commit: () => registry.add({
          voiceprintId: res.voiceprint_id, name: row.name, source: 'folder', info: res.voiceprint_info, model,
          sampleRate: meta.sampleRate, channels: meta.channels,
        }),
      };
    },
    ifUnknown: (applied: Applied) => failUnknownOutcome(applied),
  };
}

export function createSpeakerUploader(deps: { client: ServiceClient; store: OutboxStore; commit: Commit; db: Db; config: EnrollmentConfig }) {
  const registry = createSpeakerRegistry(deps.db);
  const { model, poll_interval: pollMs, poll_timeout: timeoutMs } = deps.config.speaker_training;

  return {
    async upload(row: OutboxRow, signal: AbortSignal): Promise<StepOutcome> {
      const meta = parseMeta(row);
      await deps.commit(() => deps.store.startAttempt(row.id, 'train', meta), { durable: true });
      const res = await deps.client.trainSpeaker({ audio: wavUpload(row), model, audioText: meta.text ?? '' }, { signal, retries: 0 });
      const now = Date.now();
      return {
        state: 'training',
        result: { speaker_id: res.speaker_id, model, status: 0 },
        meta: { ...meta, trainingSince: now, polls: 0, followedMs: pollMs },
        nextAttemptAt: now + pollMs,
        commit: () => registry.put({ speaker_id: res.speaker_id, model, label: row.name, status: 0 }),
      };
    },
    ifUnknown: (applied: Applied) => failUnknownOutcome(applied),

    /** One GET /train_speaker; polls back off from poll_interval up to 30 s. */
    async poll(row: OutboxRow, signal: AbortSignal): Promise<StepOutcome> {
      const meta = parseMeta(row);
      const result = JSON.parse(row.result_json ?? '{}') as { speaker_id: string; model: string };
      const polls = (meta.polls ?? 0) + 1;
      // poll_timeout counts the waits this agent planned between polls and the polls themselves, not
      // the wall clock since the training began: a Raspberry Pi boots with a stale clock, and NTP's
      // step forward (hours, the time it was off) failed a training that had run for seconds. Time
      // the agent was stopped is not counted either: the training goes on without it, and the next
      // poll sees it finished. Rows from before followedMs: the wall clock, as then.
      const started = performance.now();
      const followed = meta.followedMs ?? Math.max(0, Date.now() - (meta.trainingSince ?? row.updated_at));
      const followedNow = () => followed + (performance.now() - started);
      const later = (): StepOutcome => {
        const waitMs = Math.min(Math.max(pollMs, POLL_CAP_MS), pollMs * 1.5 ** polls);
        return { state: 'training', meta: { ...meta, polls, followedMs: Math.round(followedNow() + waitMs) }, nextAttemptAt: Date.now() + waitMs };
      };
      const timedOut = (why: string): StepOutcome => ({
        state: 'failed',
        error: { message: `training of speaker ${row.name} (${result.speaker_id}) did not finish within speaker_training.poll_timeout (${Math.round(timeoutMs / 1000)} s)${why}; follow it with 'terminal-agent speaker status --model ${result.model} ${result.speaker_id}'`, code: 'TA_ERR_TRAINING_TIMEOUT' },
      });
      let status: number;
      try {
        status = (await deps.client.speakerStatus(result.model, result.speaker_id, { signal })).status;
      } catch (err) {
        if (signal.aborted) throw err;
        if (err instanceof ServiceError && !err.retryable) {
          return { state: 'failed', error: { message: `speaker ${row.name}: cannot follow its training: ${err.message}`, code: err.code, status: err.status } };
        }
        return followedNow() < timeoutMs ? later() : timedOut(` (last error: ${(err as Error).message})`);
      }
      const put = (s: number) => () => registry.put({ speaker_id: result.speaker_id, model: result.model, label: row.name, status: s });
      if (status === 1) return { state: 'done', result: { ...result, status: 1 }, commit: put(1) };
      if (status === -1) {
        return {
          state: 'failed',
          result: { ...result, status: -1 },
          error: { message: `training of speaker ${row.name} (${result.speaker_id}) failed: the service reports status -1 (speaker does not exist); check the recording and its text, then drop them again`, code: 'TA_ERR_TRAINING_FAILED' },
          commit: put(-1),
        };
      }
      return followedNow() >= timeoutMs ? timedOut('') : later();
    },
  };
}
