import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestEmulator } from '../helpers/emulator.js';
import { VOICES } from '../../src/emulator/index.js';
import { call } from './http.js';

function wavInfo(buf: Buffer) {
  expect(buf.toString('latin1', 0, 4)).toBe('RIFF');
  expect(buf.toString('latin1', 8, 12)).toBe('WAVE');
  expect(buf.readUInt32LE(4)).toBe(buf.length - 8);
  expect(buf.toString('latin1', 36, 40)).toBe('data');
  return { format: buf.readUInt16LE(20), rate: buf.readUInt32LE(24), bits: buf.readUInt16LE(34), dataBytes: buf.readUInt32LE(40) };
}

describe('emulator POST /tts', () => {
  it('returns a real streamed WAV from espeak-ng, longer for longer text', async () => {
    const emu = await startTestEmulator({ tts: 'espeak' });
    const res = await request(`${emu.baseUrl}/tts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'Hello there', voice: 'en_female_emma' }) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('audio/wav');
    expect(res.headers['transfer-encoding']).toBe('chunked');
    const chunks: Buffer[] = [];
    for await (const c of res.body) chunks.push(c as Buffer);
    expect(chunks.length).toBeGreaterThan(1);
    const short = Buffer.concat(chunks);
    const info = wavInfo(short);
    expect(info).toMatchObject({ format: 1, rate: 22050, bits: 16 });
    expect(info.dataBytes).toBe(short.length - 44);
    const long = await call(`${emu.baseUrl}/tts`, 'POST', { json: { text: 'Hello there, this sentence is a good deal longer than the first one.' } });
    expect(wavInfo(long.body).dataBytes).toBeGreaterThan(info.dataBytes);
    // Speech, not silence.
    const samples = Array.from({ length: 2000 }, (_, i) => Math.abs(short.readInt16LE(44 + 2 * Math.floor((i * (short.length - 46)) / 4000))));
    expect(Math.max(...samples)).toBeGreaterThan(500);
  });

  it('falls back to a tone whose length follows the text', async () => {
    const emu = await startTestEmulator({ tts: 'tone' });
    const a = wavInfo((await call(`${emu.baseUrl}/tts`, 'POST', { json: { text: 'a'.repeat(20) } })).body);
    const b = wavInfo((await call(`${emu.baseUrl}/tts`, 'POST', { json: { text: 'a'.repeat(40) } })).body);
    expect(a).toMatchObject({ format: 1, rate: 16000, bits: 16 });
    expect(b.dataBytes).toBeGreaterThan(a.dataBytes * 1.8);
  });

  it('refuses missing text, invalid JSON, ratios outside 0..100 and unknown voices with 400', async () => {
    const emu = await startTestEmulator({ tts: 'tone' });
    const bad = [
      { json: {} }, { json: { text: '' } }, { json: { text: 5 } },
      { rawBody: '{"text": "hi"', contentType: 'application/json' },
      { json: { text: 'hi', volume_ratio: 101 } }, { json: { text: 'hi', speed_ratio: -1 } }, { json: { text: 'hi', pitch_ratio: '50' } },
      { json: { text: 'hi', voice: 'no_such_voice' } },
    ];
    for (const opts of bad) {
      const r = await call(`${emu.baseUrl}/tts`, 'POST', opts);
      expect(r.status, JSON.stringify(opts)).toBe(400);
      expect(r.json().message).toEqual(expect.any(String));
    }
    const edge = await call(`${emu.baseUrl}/tts`, 'POST', { json: { text: 'hi', volume_ratio: 0, speed_ratio: 100, pitch_ratio: 0 } });
    expect(edge.status).toBe(200);
  });
});

describe('emulator GET /tts (voices)', () => {
  const list = async (base: string, q: string) => {
    const r = await call(`${base}/tts${q}`, 'GET');
    expect(r.status, q).toBe(200);
    const body = r.json();
    expect(body.code).toBe(0);
    return body.data as { speakers: Record<string, unknown>[]; speakers_count: number; total_speakers_count: number };
  };

  it('holds 40+ voices across languages, genders, providers and tags; default page of 10 with name and voice', async () => {
    const emu = await startTestEmulator();
    expect(VOICES.length).toBeGreaterThanOrEqual(40);
    expect(new Set(VOICES.map((v) => v.language)).size).toBeGreaterThanOrEqual(5);
    expect(new Set(VOICES.map((v) => v.gender))).toEqual(new Set(['male', 'female']));
    expect(new Set(VOICES.flatMap((v) => v.tags)).size).toBeGreaterThanOrEqual(10);
    for (const p of ['baidu', 'bytedance', 'aliyun']) expect(VOICES.some((v) => v.provider === p)).toBe(true);
    const d = await list(emu.baseUrl, '');
    expect(d.speakers_count).toBe(10);
    expect(d.speakers).toHaveLength(10);
    expect(d.total_speakers_count).toBe(VOICES.length);
    for (const s of d.speakers) expect(Object.keys(s).sort()).toEqual(['name', 'voice']);
  });

  it('filters by language, gender, provider and tags, combined, case-insensitively', async () => {
    const emu = await startTestEmulator();
    const zhF = await list(emu.baseUrl, '?language=chinese&gender=female&top=100&all=true');
    expect(zhF.total_speakers_count).toBe(VOICES.filter((v) => v.language === 'chinese' && v.gender === 'female').length);
    for (const s of zhF.speakers) expect(s).toMatchObject({ language: 'chinese', gender: 'female' });
    const combo = await list(emu.baseUrl, '?language=English&provider=Microsoft&tags=news,british&all=true');
    expect(combo.speakers.map((s) => s.voice)).toEqual(['en_gb_female_sonia']);
    const tag = await list(emu.baseUrl, '?tags=child&top=100&all=true');
    expect(tag.total_speakers_count).toBe(VOICES.filter((v) => v.tags.includes('child')).length);
    expect(tag.speakers.every((s) => (s.tags as string[]).includes('child'))).toBe(true);
    const none = await list(emu.baseUrl, '?language=klingon');
    expect(none).toEqual({ speakers: [], speakers_count: 0, total_speakers_count: 0 });
  });

  it('matches names fuzzily (substring, any case, word tokens)', async () => {
    const emu = await startTestEmulator();
    expect((await list(emu.baseUrl, '?name=XIAO&top=100')).speakers.map((s) => s.name)).toEqual(
      VOICES.filter((v) => /xiao/i.test(`${v.name} ${v.voice}`)).map((v) => v.name),
    );
    expect((await list(emu.baseUrl, '?name=du%20mei')).speakers.map((s) => s.voice)).toEqual(['zh_female_duxiaomei']);
    expect((await list(emu.baseUrl, '?name=lao%20yeye')).speakers.map((s) => s.voice)).toEqual(['zh_senior_laoyeye']);
  });

  it('pages with skip/top: speakers_count is the page, total_speakers_count all matching', async () => {
    const emu = await startTestEmulator();
    const seen: string[] = [];
    let total = Infinity;
    for (let skip = 0; skip < total; skip += 7) {
      const page = await list(emu.baseUrl, `?skip=${skip}&top=7`);
      total = page.total_speakers_count;
      expect(page.speakers_count).toBe(page.speakers.length);
      seen.push(...page.speakers.map((s) => s.voice as string));
    }
    expect(seen).toEqual(VOICES.map((v) => v.voice));
    const past = await list(emu.baseUrl, `?skip=1000`);
    expect(past.speakers_count).toBe(0);
    expect(past.total_speakers_count).toBe(VOICES.length);
  });

  it('all=true returns full fields; bad paging or flags give 400', async () => {
    const emu = await startTestEmulator();
    const full = await list(emu.baseUrl, '?all=true&top=1');
    expect(Object.keys(full.speakers[0]!).sort()).toEqual(['age', 'description', 'gender', 'language', 'name', 'provider', 'sample_rate', 'tags', 'voice']);
    for (const q of ['?skip=-1', '?top=abc', '?all=maybe', '?gender=robot']) expect((await call(`${emu.baseUrl}/tts${q}`, 'GET')).status, q).toBe(400);
  });
});
