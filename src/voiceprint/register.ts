import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log/logger.js';
import type { ServiceClient, CodeResult, CallOptions, RegisterVoiceprintResult } from '../client/types.js';
import { InvalidInputError, NotFoundError, isAgentError, describeError } from '../errors.js';
import { writeFileAtomic } from '../util/fs-atomic.js';
import type { VoiceprintRegistry, VoiceprintSource } from './registry.js';
import type { WavFileInfo } from './wav-check.js';
import { makeDir } from '../util/make-dir.js';
import { canonicalName, nameProblem } from '../client/names.js';
import { VOICEPRINT_NAME_MAX_BYTES as MAX_NAME_BYTES } from '../client/speaker-limits.js';

// One way to register a voiceprint, whoever asks (a recording, `voiceprint register FILE`): the
// WAV sent is kept under state_dir/voiceprints/ with a JSON of what the service answered, the
// multipart fields describe the audio actually sent, and the local registry gets the result.

export interface RegisterDeps {
  client: ServiceClient;
  registry: VoiceprintRegistry;
  stateDir: string;
  /** voiceprint.model */
  model: string;
  logger?: Logger;
}

export interface RegisterInput {
  name: string;
  wav: WavFileInfo;
  source: VoiceprintSource;
  quality?: Record<string, unknown>;
  /** The WAV is already in the audit folder (a recording); else it is copied there first. */
  inAuditDir?: boolean;
  signal?: AbortSignal;
}

export interface RegisterOutcome {
  voiceprint_id: string | null;
  name: string;
  voiceprint_info: Record<string, unknown>;
  sent: SentAudio;
  quality?: Record<string, unknown>;
  /** The audio file as sent and the service's answer, under state_dir/voiceprints/. */
  audit: { file: string; json: string };
}

/** Refuses a name the service would reject, before anything is recorded or sent. */
export function checkVoiceprintName(raw: string): string {
  if (raw.trim() === '') throw new InvalidInputError('a voiceprint needs a name: pass --name NAME', { details: { reason: 'empty-name' } });
  const problem = nameProblem(raw, 'the voiceprint name');
  if (problem) throw new InvalidInputError(problem, { details: { reason: 'bad-name' } });
  const name = canonicalName(raw);
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_NAME_BYTES) {
    throw new InvalidInputError(`the voiceprint name '${name}' is ${bytes} bytes in UTF-8; the service accepts at most ${MAX_NAME_BYTES} bytes: choose a shorter name`, { details: { reason: 'name-too-long', bytes } });
  }
  return name;
}

export function auditDir(stateDir: string): string {
  return join(stateDir, 'voiceprints');
}

/** A new audit base path (no extension): time first so `ls` sorts them, then the name. */
export function newAuditBase(stateDir: string, name: string, at = new Date()): string {
  const stamp = at.toISOString().replace(/[-:]/g, '').replace('.', '');
  const safe = name.normalize('NFKD').replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 40) || 'voiceprint';
  return join(auditDir(stateDir), `${stamp}-${safe}-${randomBytes(2).toString('hex')}`);
}

export interface SentAudio {
  sample_rate: number;
  channel: number;
  format: 'wav' | 'pcm';
  model: string;
  bytes: number;
  seconds: number;
}

export async function registerVoiceprintWav(deps: RegisterDeps, input: RegisterInput): Promise<RegisterOutcome> {
  input = { ...input, name: checkVoiceprintName(input.name) };
  const { wav } = input;
  const wavPath = input.inAuditDir ? wav.path : await copyToAudit(deps.stateDir, input.name, wav.path, 'wav');
  const sent: SentAudio = { sample_rate: wav.sampleRate, channel: wav.channels, format: 'wav', model: deps.model, bytes: wav.fileBytes, seconds: Number(wav.seconds.toFixed(3)) };
  let result: RegisterVoiceprintResult;
  try {
    result = await deps.client.registerVoiceprint(
      {
        name: input.name,
        audio: { path: wavPath, filename: `${input.name.replace(/[^A-Za-z0-9._-]+/g, '_') || 'voiceprint'}.wav`, contentType: 'audio/wav' },
        sampleRate: wav.sampleRate,
        channel: wav.channels,
        model: deps.model,
        format: 'wav',
      },
      input.signal ? { signal: input.signal } : {},
    );
  } catch (err) {
    const error = isAgentError(err) ? err.toJSON() : { error: describeError(err) };
    const base = { name: input.name, source: input.source, sent, quality: input.quality, at: new Date().toISOString() };
    await writeFileAtomic(auditJsonPath(wavPath), `${JSON.stringify({ ...base, ok: false, ...error }, null, 2)}\n`).catch(() => {});
    throw err;
  }
  return recordRegistration(deps, { name: input.name, source: input.source, auditPath: wavPath, sent, quality: input.quality, result });
}

/**
 * Keeps a registration made elsewhere (the CLI's `voiceprint register` calls the client itself):
 * a copy of the file sent under state_dir/voiceprints/, its result JSON, and the registry row.
 */
export async function recordSentFile(
  deps: Omit<RegisterDeps, 'client'>,
  input: { name: string; source: VoiceprintSource; path: string; sent: SentAudio; result: RegisterVoiceprintResult },
): Promise<RegisterOutcome> {
  const auditPath = await copyToAudit(deps.stateDir, input.name, input.path, input.sent.format);
  return recordRegistration(deps, { ...input, auditPath });
}

async function copyToAudit(stateDir: string, name: string, path: string, ext: 'wav' | 'pcm'): Promise<string> {
  await makeDir(auditDir(stateDir));
  const target = `${newAuditBase(stateDir, name)}.${ext}`;
  await copyFile(path, target);
  return target;
}

function auditJsonPath(auditPath: string): string {
  return auditPath.replace(/\.(wav|pcm)$/, '') + '.json';
}

async function recordRegistration(
  deps: Omit<RegisterDeps, 'client'>,
  r: { name: string; source: VoiceprintSource; auditPath: string; sent: SentAudio; quality?: Record<string, unknown> | undefined; result: RegisterVoiceprintResult },
): Promise<RegisterOutcome> {
  const jsonPath = auditJsonPath(r.auditPath);
  const voiceprintId = r.result.voiceprint_id ?? null;
  await writeFileAtomic(jsonPath, `${JSON.stringify({
    name: r.name, source: r.source, sent: r.sent, quality: r.quality, at: new Date().toISOString(), ok: true,
    voiceprint_id: voiceprintId, voiceprint_info: r.result.voiceprint_info, code: r.result.code, message: r.result.message,
  }, null, 2)}\n`);
  if (!voiceprintId) deps.logger?.warn({ name: r.name }, 'the service registered the voiceprint but returned no voiceprint_id; it is listed without one');
  deps.registry.add({
    voiceprintId: voiceprintId ?? undefined,
    name: r.name,
    source: r.source,
    info: r.result.voiceprint_info,
    model: r.sent.model,
    sampleRate: r.sent.sample_rate,
    channels: r.sent.channel,
    seconds: r.sent.seconds,
    ...(r.quality ? { quality: r.quality } : {}),
    auditWav: r.auditPath,
    auditJson: jsonPath,
  });
  deps.logger?.info({ name: r.name, voiceprint_id: voiceprintId, source: r.source, seconds: r.sent.seconds }, 'voiceprint registered');
  return {
    voiceprint_id: voiceprintId,
    name: r.name,
    voiceprint_info: r.result.voiceprint_info,
    sent: r.sent,
    ...(r.quality ? { quality: r.quality } : {}),
    audit: { file: r.auditPath, json: jsonPath },
  };
}

export interface DeleteOutcome {
  voiceprint_id: string;
  /** The service answered 404: it was already gone there. */
  alreadyGoneOnService: boolean;
  removedLocally: boolean;
  service?: CodeResult;
}

/**
 * Deletes on the service, then locally. A 404 means the service no longer has it, so the local row
 * goes too; any other failure keeps the row so the delete can be retried.
 */
export async function deleteVoiceprintEverywhere(deps: Pick<RegisterDeps, 'client' | 'registry' | 'logger'>, voiceprintId: string, opts: CallOptions = {}): Promise<DeleteOutcome> {
  if (voiceprintId.trim() === '') throw new InvalidInputError('voiceprint delete needs a voiceprint ID (see `voiceprint list`)');
  let service: CodeResult | undefined;
  let alreadyGoneOnService = false;
  try {
    service = await deps.client.deleteVoiceprint(voiceprintId, opts);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    alreadyGoneOnService = true;
  }
  const removedLocally = deps.registry.remove(voiceprintId);
  deps.logger?.info({ voiceprint_id: voiceprintId, removedLocally, alreadyGoneOnService }, 'voiceprint deleted');
  return { voiceprint_id: voiceprintId, alreadyGoneOnService, removedLocally, ...(service ? { service } : {}) };
}

