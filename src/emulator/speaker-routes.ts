import { openSync, closeSync, readSync } from 'node:fs';
import type { Auth } from './auth.js';
import { httpError, isMultipart, jsonReply, type RequestContext, type Route } from './http.js';
import { parseMultipart, requiredField, requiredFile, type UploadedFile } from './multipart.js';
import { parseWav, type WavInfo } from './sniff.js';
import type { Store } from './store.js';

// Speaker training: a WAV sample plus its text trains a voice; status 0 while training (for the
// emulator's configured time), then 1; -1 for a speaker that does not exist.

export const SPEAKER_MODELS = ['tts-turbo', 'tts-turbo-v2', 'tts-pro'] as const;

export interface SpeakerDeps {
  store: Store;
  auth: Auth;
  maxUploadBytes: number;
}

/** Validates an uploaded WAV by reading only its chunk headers from disk. */
export function checkWavFile(file: UploadedFile): WavInfo | string {
  const fd = openSync(file.path, 'r');
  try {
    return parseWav((offset, len) => {
      const buf = Buffer.alloc(len);
      const n = readSync(fd, buf, 0, len, offset);
      return buf.subarray(0, n);
    }, file.size);
  } finally {
    closeSync(fd);
  }
}

function modelParam(value: string | null | undefined): string {
  if (value === null || value === undefined || value.trim() === '') throw httpError(400, "missing required parameter 'model'");
  if (!(SPEAKER_MODELS as readonly string[]).includes(value)) throw httpError(400, `unknown model '${value}'; use one of ${SPEAKER_MODELS.join(', ')}`);
  return value;
}

function speakerQuery(ctx: RequestContext): { model: string; speakerId: string } {
  const model = modelParam(ctx.query.get('model'));
  const speakerId = ctx.query.get('speaker_id');
  if (!speakerId || speakerId.trim() === '') throw httpError(400, "missing required parameter 'speaker_id'");
  return { model, speakerId };
}

export function speakerRoutes(deps: SpeakerDeps): Route[] {
  const { store, auth } = deps;
  return [
    {
      method: 'POST', pattern: '/train_speaker', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireOther(ctx.req);
        if (!isMultipart(ctx)) throw httpError(400, 'send multipart/form-data with fields audio (WAV file), model and audio_text');
        const form = await parseMultipart(ctx, { fields: ['model', 'audio_text'], files: ['audio'], maxFileBytes: deps.maxUploadBytes, tmpDir: store.tmpDir });
        try {
          const model = modelParam(requiredField(form, 'model'));
          const text = requiredField(form, 'audio_text');
          const audio = requiredFile(form, 'audio');
          const wav = checkWavFile(audio);
          if (typeof wav === 'string') throw httpError(400, `audio: ${wav}`);
          if (wav.durationMs < 500) throw httpError(400, `audio is ${wav.durationMs} ms long; record at least half a second of speech`);
          store.adoptAudio(audio.path, audio.sha256);
          const speakerId = store.createSpeaker(model, text, audio.sha256);
          return jsonReply(200, { speaker_id: speakerId, code: 0, message: 'training started' });
        } finally {
          await form.cleanup();
        }
      },
    },
    {
      method: 'GET', pattern: '/train_speaker', errorStyle: 'code',
      handler: (ctx) => {
        auth.requireOther(ctx.req);
        const { model, speakerId } = speakerQuery(ctx);
        return jsonReply(200, { model, speaker_id: speakerId, status: store.speakerStatus(model, speakerId) });
      },
    },
    {
      method: 'DELETE', pattern: '/train_speaker', errorStyle: 'code',
      handler: (ctx) => {
        auth.requireOther(ctx.req);
        const { model, speakerId } = speakerQuery(ctx);
        if (!store.deleteSpeaker(model, speakerId)) throw httpError(404, `speaker '${speakerId}' does not exist for model ${model}`);
        return jsonReply(200, { code: 0, message: 'success' });
      },
    },
  ];
}
