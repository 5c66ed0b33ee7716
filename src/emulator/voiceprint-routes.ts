import type { Auth } from './auth.js';
import { httpError, isMultipart, jsonReply, readJsonObject, type Route } from './http.js';
import { parseMultipart, requiredField, requiredFile } from './multipart.js';
import { sniffOtherContainer } from './sniff.js';
import { checkWavFile } from './speaker-routes.js';
import type { Store } from './store.js';

// Voiceprints: registered from a WAV (or raw 16-bit PCM with sample_rate/channel) and deleted by id.

export const VOICEPRINT_MODELS = ['voiceprint-turbo', 'voiceprint-pro'] as const;
const SAMPLE_RATES = [8000, 16000, 22050, 24000, 32000, 44100, 48000];
const MAX_NAME_BYTES = 32;

export interface VoiceprintDeps {
  store: Store;
  auth: Auth;
  maxUploadBytes: number;
}

function intField(raw: string | undefined, name: string, def: number, allowed: readonly number[]): number {
  if (raw === undefined || raw.trim() === '') return def;
  if (!/^\d+$/.test(raw.trim())) throw httpError(400, `${name} must be an integer, got '${raw}'`);
  const n = Number(raw);
  if (!allowed.includes(n)) throw httpError(400, `${name} ${n} is not supported; use one of ${allowed.join(', ')}`);
  return n;
}

export function voiceprintRoutes(deps: VoiceprintDeps): Route[] {
  const { store, auth } = deps;
  return [
    {
      method: 'POST', pattern: '/voiceprint', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireOther(ctx.req);
        if (!isMultipart(ctx)) throw httpError(400, 'send multipart/form-data with fields name and audio');
        const form = await parseMultipart(ctx, {
          fields: ['name', 'sample_rate', 'channel', 'model', 'format'], files: ['audio'], maxFileBytes: deps.maxUploadBytes, tmpDir: store.tmpDir,
        });
        try {
          const name = requiredField(form, 'name');
          const nameBytes = Buffer.byteLength(name, 'utf8');
          if (nameBytes > MAX_NAME_BYTES) throw httpError(400, `name is ${nameBytes} bytes in UTF-8; the limit is ${MAX_NAME_BYTES} bytes`);
          let sampleRate = intField(form.fields.sample_rate, 'sample_rate', 16000, SAMPLE_RATES);
          let channel = intField(form.fields.channel, 'channel', 1, [1, 2]);
          const model = form.fields.model?.trim() || 'voiceprint-turbo';
          if (!(VOICEPRINT_MODELS as readonly string[]).includes(model)) throw httpError(400, `unknown model '${model}'; use one of ${VOICEPRINT_MODELS.join(', ')}`);
          const format = form.fields.format?.trim().toLowerCase() || undefined;
          if (format !== undefined && format !== 'wav' && format !== 'pcm') throw httpError(400, `format must be pcm or wav, got '${format}'`);
          const audio = requiredFile(form, 'audio');
          const isRiff = audio.head.toString('latin1', 0, 4) === 'RIFF';
          const detected = isRiff ? 'wav' : 'pcm';
          if (format !== undefined && format !== detected) throw httpError(400, `format is '${format}' but the audio is ${isRiff ? 'a WAV file' : 'not a WAV file'}`);
          let durationMs: number;
          if (isRiff) {
            const wav = checkWavFile(audio);
            if (typeof wav === 'string') throw httpError(400, `audio: ${wav}`);
            if (wav.bitsPerSample !== 16) throw httpError(400, `audio is ${wav.bitsPerSample}-bit; voiceprints take 16-bit PCM`);
            if (form.fields.sample_rate !== undefined && wav.sampleRate !== sampleRate) {
              throw httpError(400, `sample_rate ${sampleRate} does not match the WAV header (${wav.sampleRate})`);
            }
            sampleRate = wav.sampleRate;
            channel = wav.channels;
            durationMs = wav.durationMs;
          } else {
            const other = sniffOtherContainer(audio.head);
            if (other) throw httpError(400, `audio is ${other}, not WAV or raw PCM`);
            if (audio.size % (2 * channel) !== 0) throw httpError(400, `raw PCM audio of ${audio.size} bytes is not whole 16-bit frames of ${channel} channel(s)`);
            durationMs = Math.round((audio.size / (2 * channel) / sampleRate) * 1000);
          }
          if (durationMs < 500) throw httpError(400, `audio is ${durationMs} ms long; record at least half a second of speech`);
          store.adoptAudio(audio.path, audio.sha256);
          const info = { name, model, sample_rate: sampleRate, channel, format: detected, duration_ms: durationMs, created_at: new Date().toISOString() };
          const voiceprintId = store.createVoiceprint(name, info, audio.sha256);
          return jsonReply(200, { voiceprint_info: store.voiceprintInfo(voiceprintId), code: 0, message: 'success' });
        } finally {
          await form.cleanup();
        }
      },
    },
    {
      method: 'DELETE', pattern: '/voiceprint', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireOther(ctx.req);
        const body = await readJsonObject(ctx);
        const id = body.voiceprint_id;
        if (typeof id !== 'string' || id.trim() === '') throw httpError(400, "missing required field 'voiceprint_id' (a non-empty string)");
        if (!store.deleteVoiceprint(id)) throw httpError(404, `voiceprint '${id}' does not exist`);
        return jsonReply(200, { code: 0, message: 'success' });
      },
    },
  ];
}
