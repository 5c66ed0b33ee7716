import { stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { boolOpt, stringOpt, type CliContext, type CommandSpec } from './command.js';
import { writeJson, writeLine, writeTable, writeWarning, type Column } from './output.js';
import { listEveryVoice, VOICE_PAGE_SIZE } from '../client/voice-catalogue.js';
import { checkNameArg, intOption, withClient } from './api-client.js';
import { checkWavFile } from '../voiceprint/wav-check.js';
import { deleteAndForget, keepRegistered, voiceprintCommands } from './voiceprint-commands.js';
import { speakerListCommands } from './speaker-commands.js';
import type { FileUpload, VoiceItem, VoiceQuery, SpeakerStatus } from '../client/types.js';
import { SPEAKER_MODELS, VOICEPRINT_NAME_MAX_BYTES } from '../client/speaker-limits.js';
import { InvalidInputError, TimeoutError, UsageError, interruptedError } from '../errors.js';
import { wait } from '../util/backoff.js';
import { formatDuration } from '../util/units.js';
import { openLiveArea } from './live-area.js';
import { trainingLine } from './progress-format.js';

// `voices`, `speaker ...`, `voiceprint register|delete`: one command object per API call.

const VOICE_COLUMNS: Column<VoiceItem>[] = [
  { header: 'voice', value: (v) => v.voice },
  { header: 'name', value: (v) => v.name },
  { header: 'language', value: (v) => v.language },
  { header: 'gender', value: (v) => v.gender },
  { header: 'provider', value: (v) => v.provider },
  { header: 'tags', value: (v) => (Array.isArray(v.tags) ? v.tags.join(',') : v.tags) },
];


const voices: CommandSpec = {
  path: ['voices'],
  summary: 'list the synthesis voices (filters combine; --all pages through the whole catalogue)',
  usage: '[--language L] [--gender G] [--name N] [--provider P] [--tags a,b] [--all] [--skip N] [--top N]',
  options: {
    language: { type: 'string', description: 'language, e.g. chinese, english', valueName: 'L' },
    gender: { type: 'string', description: 'male or female', valueName: 'G' },
    name: { type: 'string', description: 'fuzzy match on the voice name', valueName: 'N' },
    provider: { type: 'string', description: 'provider, e.g. baidu, bytedance, aliyun', valueName: 'P' },
    tags: { type: 'string', description: 'tags, comma separated', valueName: 'a,b' },
    all: { type: 'boolean', description: `full records, every page (${VOICE_PAGE_SIZE} per request unless --top)` },
    skip: { type: 'string', description: 'start at this offset (default 0)', valueName: 'N' },
    top: { type: 'string', description: 'items per page (service default 10)', valueName: 'N' },
  },
  positionals: { min: 0, max: 0 },
  run: async (args, ctx) => {
    const gender = stringOpt(args, 'gender');
    if (gender !== undefined && gender !== 'male' && gender !== 'female') throw new UsageError(`--gender ${JSON.stringify(gender)}: use male or female`);
    const all = boolOpt(args, 'all');
    const skip = intOption(stringOpt(args, 'skip'), 'skip');
    const top = intOption(stringOpt(args, 'top'), 'top');
    if (top === 0) throw new UsageError('--top 0 would list nothing; give 1 or more');
    const filters: VoiceQuery = {};
    for (const k of ['language', 'gender', 'name', 'provider', 'tags'] as const) {
      const v = stringOpt(args, k);
      if (v !== undefined) filters[k] = v;
    }
    await withClient(args, ctx, async ({ client, call }) => {
      const { speakers, skipped, total } = all
        ? await listEveryVoice(client, filters, call, { ...(skip !== undefined ? { skip } : {}), ...(top !== undefined ? { top } : {}) })
        : await client.listVoices({ ...filters, skip, top }, call).then((p) => ({ speakers: p.speakers, skipped: p.skipped, total: p.total_speakers_count }));
      if (skipped > 0) {
        writeWarning(ctx, args.global.json, {
          text: `${skipped} malformed voice record(s) in the service's answer were left out (not an object, or no string voice and name)`,
          code: 'TA_WARN_SKIPPED_RECORDS',
          details: { skipped },
        });
      }
      if (args.global.json) return writeJson(ctx, { speakers, speakers_count: speakers.length, total_speakers_count: total });
      // Without --all the service sends name and voice only: leave out columns nobody filled.
      const columns = VOICE_COLUMNS.filter((c, i) => i < 2 || speakers.some((v) => c.value(v) !== undefined));
      writeTable(ctx, speakers, columns, '(no voices match)');
      writeLine(ctx, `${speakers.length} of ${total} voice(s)${!all && speakers.length < total ? ' (--all lists every one, --skip N --top N a page of them)' : ''}`);
    });
  },
};

function modelOption(value: string | undefined, fallback: string): string {
  const model = value ?? fallback;
  if (!(SPEAKER_MODELS as readonly string[]).includes(model)) {
    throw new UsageError(`--model ${JSON.stringify(model)} is not a speaker model; use one of ${SPEAKER_MODELS.join(', ')}`);
  }
  return model;
}

const MODEL_OPTION = { type: 'string', description: `${SPEAKER_MODELS.join(' | ')} (default speaker_training.model)`, valueName: 'M' } as const;
const STATUS_TEXT: Record<number, string> = { 1: 'trained', 0: 'training', [-1]: 'does not exist' };

function printStatus(ctx: CliContext, json: boolean, s: SpeakerStatus): void {
  if (json) writeJson(ctx, { ...s, state: STATUS_TEXT[s.status] ?? 'unknown' });
  else writeLine(ctx, `speaker ${s.speaker_id} (${s.model}): ${STATUS_TEXT[s.status] ?? `unknown status ${s.status}`}`);
}

const speakerTrain: CommandSpec = {
  path: ['speaker', 'train'],
  summary: 'train a synthesis voice from a clean WAV of someone reading TEXT',
  usage: '--model M --text T FILE [--wait]',
  options: {
    model: MODEL_OPTION,
    text: { type: 'string', description: 'the text spoken in the recording, as exactly as possible', valueName: 'T' },
    wait: { type: 'boolean', description: 'follow the training status until it is done (speaker_training.poll_timeout)' },
  },
  positionals: { min: 1, max: 1, names: ['FILE'] },
  run: async (args, ctx) => {
    const text = stringOpt(args, 'text');
    if (text === undefined) throw new UsageError("'speaker train' needs --text T (the words spoken in the recording)");
    if (text.trim() === '') throw new InvalidInputError('--text is empty');
    const path = resolve(ctx.cwd, args.positionals[0]!);
    await checkWavFile(path);
    await withClient(args, ctx, async ({ client, call, config }) => {
      const model = modelOption(stringOpt(args, 'model'), config.speaker_training.model);
      const created = await client.trainSpeaker({ audio: { path, contentType: 'audio/wav' }, model, audioText: text }, call);
      if (!boolOpt(args, 'wait')) {
        if (args.global.json) writeJson(ctx, { speaker_id: created.speaker_id, model, status: 0, state: 'training' });
        else writeLine(ctx, `training speaker ${created.speaker_id} (${model}); follow it with: terminal-agent speaker status --model ${model} ${created.speaker_id}`);
        return;
      }
      const { poll_interval: every, poll_timeout: limit } = config.speaker_training;
      // The monotonic clock: NTP stepping the wall clock while this waits is no reason to give up.
      const started = performance.now();
      const deadline = started + limit;
      // On a terminal: the status and the time elapsed, redrawn four times a second.
      const area = await openLiveArea(ctx, args.global.json);
      let state = 'sent, waiting for the first status';
      const draw = () => area.update(trainingLine(created.speaker_id, model, state, performance.now() - started));
      const ticker = area.live ? setInterval(draw, 250) : undefined;
      if (area.live) draw();
      // Ctrl-C stops following, not the training, which goes on at the service: say so and how to
      // follow it, and exit 1, since what was asked (wait until trained) did not happen.
      const interrupted = (cause?: unknown) => interruptedError(ctx.shutdown, `speaker ${created.speaker_id} is still training on the service: follow it with: terminal-agent speaker status --model ${model} ${created.speaker_id}`, cause);
      try {
        for (;;) {
          let s;
          try {
            s = await client.speakerStatus(model, created.speaker_id, call);
          } catch (err) {
            if (ctx.shutdown.aborted) throw interrupted(err);
            throw err;
          }
          if (s.status !== 0) {
            area.clear();
            printStatus(ctx, args.global.json, s);
            return s.status === 1 ? 0 : 1;
          }
          state = STATUS_TEXT[0]!;
          if (area.live) draw();
          if (performance.now() + every > deadline) {
            throw new TimeoutError(`speaker ${created.speaker_id} is still training after ${formatDuration(limit)} (speaker_training.poll_timeout); check later with 'speaker status'`, { operation: 'GET /train_speaker' });
          }
          if (!(await wait(every, ctx.shutdown))) throw interrupted();
        }
      } finally {
        clearInterval(ticker);
        area.clear();
      }
    });
  },
};

const speakerStatus: CommandSpec = {
  path: ['speaker', 'status'],
  summary: 'show the training status of a speaker (exit 1 when it does not exist)',
  usage: '--model M ID',
  options: { model: MODEL_OPTION },
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: (args, ctx) => withClient(args, ctx, async ({ client, call, config }) => {
    const model = modelOption(stringOpt(args, 'model'), config.speaker_training.model);
    const s = await client.speakerStatus(model, args.positionals[0]!, call);
    printStatus(ctx, args.global.json, s);
    return s.status === -1 ? 1 : 0;
  }),
};

const speakerDelete: CommandSpec = {
  path: ['speaker', 'delete'],
  summary: 'delete a trained speaker',
  usage: '--model M ID',
  options: { model: MODEL_OPTION },
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: (args, ctx) => withClient(args, ctx, async ({ client, call, config }) => {
    const model = modelOption(stringOpt(args, 'model'), config.speaker_training.model);
    const id = args.positionals[0]!;
    const r = await client.deleteSpeaker(model, id, call);
    if (args.global.json) writeJson(ctx, { speaker_id: id, model, deleted: true, code: r.code, message: r.message });
    else writeLine(ctx, `deleted speaker ${id} (${model})`);
  }),
};

const voiceprintRegister: CommandSpec = {
  path: ['voiceprint', 'register'],
  summary: 'register a voiceprint from a WAV file (or raw .pcm at voiceprint.sample_rate, mono)',
  usage: '--name N FILE',
  options: { name: { type: 'string', description: `speaker nickname, at most ${VOICEPRINT_NAME_MAX_BYTES} bytes`, valueName: 'N' } },
  positionals: { min: 1, max: 1, names: ['FILE'] },
  run: async (args, ctx) => {
    const name = checkNameArg(stringOpt(args, 'name'), "'voiceprint register'", VOICEPRINT_NAME_MAX_BYTES);
    const path = resolve(ctx.cwd, args.positionals[0]!);
    const pcm = extname(path).toLowerCase() === '.pcm';
    const wav = pcm ? undefined : await checkWavFile(path);
    await withClient(args, ctx, async ({ client, call, config }) => {
      // The audit copy kept after it is registered must fit above state_min_free: check before sending.
      const { createDiskFloor } = await import('../disk/disk-floor.js');
      await createDiskFloor(config.state_dir, config.state_min_free).assertRoom((await stat(path)).size, 'voiceprint audit copies');
      const audio: FileUpload = { path, contentType: pcm ? 'application/octet-stream' : 'audio/wav' };
      const r = await client.registerVoiceprint({
        name, audio, model: config.voiceprint.model,
        format: pcm ? 'pcm' : 'wav',
        sampleRate: wav ? wav.sampleRate : config.voiceprint.sample_rate,
        channel: wav ? wav.channels : 1,
      }, call);
      await keepRegistered(config, { name, path, wav, result: r });
      if (args.global.json) writeJson(ctx, { name, voiceprint_id: r.voiceprint_id ?? null, voiceprint_info: r.voiceprint_info });
      else writeLine(ctx, `registered voiceprint ${JSON.stringify(name)}: ${r.voiceprint_id ?? '(the service returned no voiceprint_id)'}`);
    });
  },
};

const voiceprintDelete: CommandSpec = {
  path: ['voiceprint', 'delete'],
  summary: 'delete a voiceprint',
  usage: 'ID',
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: (args, ctx) => withClient(args, ctx, async (session) => {
    const id = args.positionals[0]!;
    const r = await deleteAndForget(session, id);
    if (args.global.json) writeJson(ctx, { voiceprint_id: id, deleted: true, code: r.code, message: r.message });
    else writeLine(ctx, `deleted voiceprint ${id}`);
  }),
};

export const voiceCommands: CommandSpec[] = [voices, speakerTrain, speakerStatus, speakerDelete, voiceprintRegister, voiceprintDelete, ...voiceprintCommands, ...speakerListCommands];
