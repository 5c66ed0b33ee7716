import { InvalidInputError } from '../errors.js';
import type { HttpCore } from './http-core.js';
import { multipartBody, checkUpload } from './multipart.js';
import { badResponse } from './error-mapping.js';
import { checkName } from './faces-api.js';
import { codeResult } from './knowledge-notify-api.js';
import type { ServiceClient } from './types.js';

// Speaker training and voiceprints on {base_url}, credential per service.other_auth
// (service-api.md 4.5, 4.6).

import { VOICEPRINT_NAME_MAX_BYTES } from './speaker-limits.js';

export { SPEAKER_MODELS, VOICEPRINT_NAME_MAX_BYTES } from './speaker-limits.js';

type SpeakerVoiceprintApi = Pick<ServiceClient, 'trainSpeaker' | 'speakerStatus' | 'deleteSpeaker' | 'registerVoiceprint' | 'deleteVoiceprint'>;

function need(value: string, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidInputError(`${what} is empty`);
  return value;
}

export function speakerVoiceprintApi(core: HttpCore): SpeakerVoiceprintApi {
  const other = { base: 'service', auth: 'other' } as const;
  return {
    async trainSpeaker(request, opts) {
      need(request.model, 'speaker model');
      need(request.audioText, 'the text spoken in the audio (audio_text)');
      const audio = await checkUpload('audio', request.audio);
      const spec = {
        ...other, operation: 'POST /train_speaker', method: 'POST', path: '/train_speaker', opts,
        body: multipartBody({ model: request.model, audio_text: request.audioText }, { audio }),
      } as const;
      const res = await core.send(spec);
      const result = codeResult(res);
      const id = result.speaker_id;
      if (typeof id !== 'string' || id === '') throw badResponse(core.errorContext(spec), res.status, 'no speaker_id in the answer');
      return { ...result, speaker_id: id };
    },

    async speakerStatus(model, speakerId, opts) {
      const spec = {
        ...other, operation: 'GET /train_speaker', subject: `speaker ${speakerId}`, method: 'GET', path: '/train_speaker', opts,
        query: { model: need(model, 'speaker model'), speaker_id: need(speakerId, 'speaker id') },
      } as const;
      const res = await core.send(spec);
      const o = (res.json ?? {}) as Record<string, unknown>;
      const status = typeof o.status === 'string' && /^-?\d+$/.test(o.status) ? Number(o.status) : o.status;
      if (typeof status !== 'number') throw badResponse(core.errorContext(spec), res.status, 'no numeric status in the answer');
      return {
        model: typeof o.model === 'string' ? o.model : model,
        speaker_id: typeof o.speaker_id === 'string' ? o.speaker_id : speakerId,
        status,
      };
    },

    async deleteSpeaker(model, speakerId, opts) {
      const res = await core.send({
        ...other, operation: 'DELETE /train_speaker', subject: `speaker ${speakerId}`, method: 'DELETE', path: '/train_speaker', opts,
        query: { model: need(model, 'speaker model'), speaker_id: need(speakerId, 'speaker id') },
      });
      return codeResult(res);
    },

    async registerVoiceprint(request, opts) {
      const name = checkName(request.name, 'voiceprint', VOICEPRINT_NAME_MAX_BYTES);
      const audio = await checkUpload('audio', request.audio);
      const fields = {
        name,
        sample_rate: request.sampleRate,
        channel: request.channel,
        model: request.model,
        format: request.format,
      };
      const spec = {
        ...other, operation: 'POST /voiceprint', subject: `name ${JSON.stringify(name)}`, method: 'POST', path: '/voiceprint', opts,
        body: multipartBody(fields, { audio }),
      } as const;
      const res = await core.send(spec);
      const result = codeResult(res);
      const info = result.voiceprint_info;
      const infoObj = info && typeof info === 'object' && !Array.isArray(info) ? (info as Record<string, unknown>) : {};
      // voiceprint_info's contents are not shown: look inside it first, then at the top level.
      const inner = infoObj.voiceprint_id;
      const outer = result.voiceprint_id;
      const pick = (v: unknown) => (typeof v === 'string' && v ? v : typeof v === 'number' ? String(v) : undefined);
      return { code: result.code, message: result.message, voiceprint_info: infoObj, voiceprint_id: pick(inner) ?? pick(outer) };
    },

    async deleteVoiceprint(voiceprintId, opts) {
      const id = need(voiceprintId, 'voiceprint id');
      const res = await core.send({
        ...other, operation: 'DELETE /voiceprint', subject: `voiceprint ${id}`, method: 'DELETE', path: '/voiceprint', opts,
        headers: { 'content-type': 'application/json' }, body: () => JSON.stringify({ voiceprint_id: id }),
      });
      return codeResult(res);
    },
  };
}
