import type { Logger } from '../log/logger.js';
import type { Auth } from './auth.js';
import { httpError, jsonReply, readJsonObject, type Route } from './http.js';
import type { Store } from './store.js';
import type { TtsEngine } from './types.js';
import { espeakVoiceFor, findVoice, listVoices } from './voices.js';
import { chunked, espeakWav, toneWav, type SynthParams } from './wav-synth.js';

// POST /tts (a WAV of the text, streamed in chunks) and GET /tts (the voice catalogue).

export interface TtsDeps {
  store: Store;
  auth: Auth;
  engine: TtsEngine;
  logger: Logger;
}

const MAX_TEXT_CHARS = 5000;

function ratio(body: Record<string, unknown>, name: string): number {
  const v = body[name];
  if (v === undefined || v === null) return 50;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 100) throw httpError(400, `${name} must be a number from 0 to 100 (50 is normal), got ${JSON.stringify(v)}`);
  return v;
}

export function ttsRoutes(deps: TtsDeps): Route[] {
  const { store, auth } = deps;
  return [
    {
      method: 'POST', pattern: '/tts', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireOther(ctx.req);
        const body = await readJsonObject(ctx);
        const { text, voice } = body;
        if (typeof text !== 'string' || text.trim() === '') throw httpError(400, "missing required field 'text' (a non-empty string)");
        if ([...text].length > MAX_TEXT_CHARS) throw httpError(400, `text is longer than ${MAX_TEXT_CHARS} characters; split it`);
        if (voice !== undefined && voice !== null && typeof voice !== 'string') throw httpError(400, "field 'voice' must be a string");
        const catalogued = typeof voice === 'string' && voice !== '' ? findVoice(voice) : undefined;
        if (typeof voice === 'string' && voice !== '' && !catalogued && !store.trainedVoice(voice)) {
          throw httpError(400, `unknown voice '${voice}'; list the voices with GET /tts`);
        }
        const params: SynthParams = {
          text, espeakVoice: espeakVoiceFor(catalogued),
          volume: ratio(body, 'volume_ratio'), speed: ratio(body, 'speed_ratio'), pitch: ratio(body, 'pitch_ratio'),
        };
        let wav = deps.engine === 'tone' ? undefined : await espeakWav(params);
        if (!wav) {
          if (deps.engine === 'espeak') throw httpError(500, 'speech synthesis failed (espeak-ng unavailable)');
          wav = toneWav(params);
        }
        return { status: 200, headers: { 'Content-Type': 'audio/wav' }, body: chunked(wav) };
      },
    },
    {
      method: 'GET', pattern: '/tts', errorStyle: 'code',
      handler: (ctx) => {
        auth.requireOther(ctx.req);
        return jsonReply(200, { code: 0, message: 'success', data: listVoices(ctx.query) });
      },
    },
  ];
}
