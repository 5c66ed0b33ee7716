import { InvalidInputError } from '../errors.js';
import type { HttpCore } from './http-core.js';
import { checkCode } from './http-core.js';
import { badResponse, serverMessageOf } from './error-mapping.js';
import type { ServiceClient, VoiceItem, VoicePage, StreamedBody } from './types.js';

// Speech synthesis and the voice catalogue on {base_url} (service-api.md 4.4).

type TtsApi = Pick<ServiceClient, 'synthesize' | 'listVoices'>;

const RATIOS = ['volume_ratio', 'speed_ratio', 'pitch_ratio'] as const;

async function readSmall(res: StreamedBody, limit = 64 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const c of res.body) {
      chunks.push(c as Buffer);
      size += (c as Buffer).length;
      if (size >= limit) break;
    }
  } finally {
    await res.cancel();
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function ttsApi(core: HttpCore): TtsApi {
  return {
    async synthesize(request, opts) {
      if (typeof request.text !== 'string' || request.text.trim() === '') throw new InvalidInputError('nothing to say: the text is empty');
      const body: Record<string, string | number> = { text: request.text };
      if (request.voice) body.voice = request.voice;
      for (const k of RATIOS) {
        const v = request[k];
        if (v === undefined) continue;
        if (!Number.isFinite(v) || v < 0 || v > 100) throw new InvalidInputError(`${k} ${v} is outside 0..100 (50 is normal)`);
        body[k] = v;
      }
      const spec = {
        operation: 'POST /tts', base: 'service', auth: 'other', method: 'POST', path: '/tts',
        headers: { 'content-type': 'application/json', accept: 'audio/wav' }, body: () => JSON.stringify(body), opts,
        // Played as it arrives, for as long as the phrase lasts: bounded by pace, not by one deadline.
        streamLimit: 'pace',
      } as const;
      const res = await core.open(spec);
      const type = res.contentType.toLowerCase();
      if (type.includes('json') || type.startsWith('text/')) {
        // A 200 carrying JSON is an error in disguise (non-zero code) or not audio at all.
        const text = await readSmall(res);
        const ctx = core.errorContext(spec);
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        checkCode(ctx, res.status, json);
        const said = serverMessageOf(text, ctx.secrets);
        throw badResponse(ctx, res.status, `${type} instead of audio/wav${said ? ` (${said})` : ''}`);
      }
      return res;
    },

    async listVoices(query, opts) {
      const q = query ?? {};
      for (const k of ['skip', 'top'] as const) {
        const v = q[k];
        if (v !== undefined && (!Number.isInteger(v) || v < 0)) throw new InvalidInputError(`voices ${k} ${v} must be a whole number >= 0`);
      }
      const spec = {
        operation: 'GET /tts', base: 'service', auth: 'other', method: 'GET', path: '/tts', opts,
        query: {
          language: q.language, gender: q.gender, name: q.name, provider: q.provider, tags: q.tags,
          all: q.all === undefined ? undefined : String(q.all), skip: q.skip, top: q.top,
        },
      } as const;
      const res = await core.send(spec);
      const data = (res.json as { data?: unknown } | undefined)?.data as Record<string, unknown> | undefined;
      if (!data || !Array.isArray(data.speakers)) throw badResponse(core.errorContext(spec), res.status, 'GET /tts returned no data.speakers array');
      // Record by record: a malformed voice is left out and counted, the others are listed.
      const speakers: VoiceItem[] = [];
      for (const v of data.speakers as unknown[]) {
        const o = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
        if (o && typeof o.voice === 'string' && o.voice !== '' && typeof o.name === 'string') speakers.push(o as VoiceItem);
      }
      const skipped = data.speakers.length - speakers.length;
      const page: VoicePage = {
        speakers,
        speakers_count: typeof data.speakers_count === 'number' ? data.speakers_count : speakers.length,
        total_speakers_count: typeof data.total_speakers_count === 'number' ? data.total_speakers_count : speakers.length,
        skipped,
      };
      return page;
    },
  };
}
