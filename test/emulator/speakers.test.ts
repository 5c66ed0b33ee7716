import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startTestEmulator } from '../helpers/emulator.js';
import { jpegImage, pcmTone, wavHeader, wavTone } from './fixtures.js';
import { call, form } from './http.js';

const wavFile = (data: Buffer, filename = 'sample.wav') => ({ audio: { data, filename, type: 'audio/wav' } });

describe('emulator speaker training', () => {
  it('trains: status 0 for the training time, then 1; -1 for an unknown speaker; delete works', async () => {
    const emu = await startTestEmulator({ trainMs: 1500 });
    const res = await call(`${emu.baseUrl}/train_speaker`, 'POST', { form: form({ model: 'tts-turbo', audio_text: 'hello world' }, wavFile(wavTone(1))) });
    expect(res.status).toBe(200);
    const { speaker_id, code } = res.json();
    expect(code).toBe(0);
    expect(speaker_id).toEqual(expect.any(String));
    const status = async (model: string, id: string) => (await call(`${emu.baseUrl}/train_speaker?model=${model}&speaker_id=${id}`, 'GET')).json();
    expect(await status('tts-turbo', speaker_id)).toEqual({ model: 'tts-turbo', speaker_id, status: 0 });
    // Poll as a client would; the status turns 1 once the training time has passed.
    const started = Date.now();
    let st = 0;
    while (st === 0 && Date.now() - started < 10_000) {
      await sleep(100);
      st = (await status('tts-turbo', speaker_id)).status;
    }
    expect(st).toBe(1);
    expect((await status('tts-pro', speaker_id)).status).toBe(-1);
    expect((await status('tts-turbo', 'spk_unknown')).status).toBe(-1);
    // A trained speaker is usable as a voice.
    expect((await call(`${emu.baseUrl}/tts`, 'POST', { json: { text: 'hi', voice: speaker_id } })).status).toBe(200);
    const del = await call(`${emu.baseUrl}/train_speaker?model=tts-turbo&speaker_id=${speaker_id}`, 'DELETE');
    expect(del.status).toBe(200);
    expect(del.json()).toEqual({ code: 0, message: expect.any(String) });
    expect((await status('tts-turbo', speaker_id)).status).toBe(-1);
    expect((await call(`${emu.baseUrl}/train_speaker?model=tts-turbo&speaker_id=${speaker_id}`, 'DELETE')).status).toBe(404);
    expect(emu.state.speakers()).toEqual([]);
  });

  it('accepts each model and refuses an unknown one, a missing field or audio that is not a valid PCM WAV', async () => {
    const emu = await startTestEmulator();
    for (const model of ['tts-turbo', 'tts-turbo-v2', 'tts-pro']) {
      expect((await call(`${emu.baseUrl}/train_speaker`, 'POST', { form: form({ model, audio_text: 'x' }, wavFile(wavTone(1))) })).status).toBe(200);
    }
    const pcm = pcmTone(1);
    const streamingHeader = Buffer.concat([wavHeader(0xffffffff - 36), pcm]);
    const cases: [Record<string, string>, Record<string, { data: Buffer; filename: string; type: string }>][] = [
      [{ model: 'tts-ultra', audio_text: 'x' }, wavFile(wavTone(1))],
      [{ audio_text: 'x' }, wavFile(wavTone(1))],
      [{ model: 'tts-turbo' }, wavFile(wavTone(1))],
      [{ model: 'tts-turbo', audio_text: 'x' }, {}],
      [{ model: 'tts-turbo', audio_text: 'x' }, wavFile(jpegImage(), 'fake.wav')],
      [{ model: 'tts-turbo', audio_text: 'x' }, wavFile(pcm, 'raw.wav')],
      [{ model: 'tts-turbo', audio_text: 'x' }, wavFile(streamingHeader)],
      [{ model: 'tts-turbo', audio_text: 'x' }, wavFile(wavTone(1).subarray(0, 10_000))],
    ];
    for (const [fields, files] of cases) {
      const r = await call(`${emu.baseUrl}/train_speaker`, 'POST', { form: form(fields, files) });
      expect(r.status, JSON.stringify(fields)).toBe(400);
      expect(r.json().message).toEqual(expect.any(String));
    }
    expect(emu.state.speakers()).toHaveLength(3);
    expect((await call(`${emu.baseUrl}/train_speaker?model=tts-turbo`, 'GET')).status).toBe(400);
    expect((await call(`${emu.baseUrl}/train_speaker?speaker_id=x`, 'DELETE')).status).toBe(400);
  });
});

describe('emulator voiceprints', () => {
  it('registers from WAV or raw PCM, answers voiceprint_info with an id, and deletes by JSON voiceprint_id', async () => {
    const emu = await startTestEmulator();
    const reg = await call(`${emu.baseUrl}/voiceprint`, 'POST', { form: form({ name: 'Ada' }, wavFile(wavTone(2))) });
    expect(reg.status).toBe(200);
    const body = reg.json();
    expect(body).toMatchObject({ code: 0, message: expect.any(String), voiceprint_info: { voiceprint_id: expect.any(String), name: 'Ada', sample_rate: 16000, channel: 1 } });
    const raw = await call(`${emu.baseUrl}/voiceprint`, 'POST', {
      form: form({ name: '张伟', sample_rate: '8000', channel: '1', format: 'pcm', model: 'voiceprint-turbo' }, { audio: { data: pcmTone(1, 8000), filename: 'a.pcm', type: 'application/octet-stream' } }),
    });
    expect(raw.status).toBe(200);
    expect(raw.json().voiceprint_info).toMatchObject({ name: '张伟', sample_rate: 8000, format: 'pcm', duration_ms: 1000 });
    expect(emu.state.voiceprints().map((v) => v.name)).toEqual(['Ada', '张伟']);
    const id = body.voiceprint_info.voiceprint_id as string;
    const del = await call(`${emu.baseUrl}/voiceprint`, 'DELETE', { json: { voiceprint_id: id } });
    expect(del.status).toBe(200);
    expect(del.json()).toEqual({ code: 0, message: expect.any(String) });
    expect((await call(`${emu.baseUrl}/voiceprint`, 'DELETE', { json: { voiceprint_id: id } })).status).toBe(404);
    expect((await call(`${emu.baseUrl}/voiceprint`, 'DELETE', { json: {} })).status).toBe(400);
    expect(emu.state.voiceprints().map((v) => v.name)).toEqual(['张伟']);
  });

  it('refuses names over 32 UTF-8 bytes and audio that is not WAV/PCM', async () => {
    const emu = await startTestEmulator();
    const ok32 = 'a'.repeat(32);
    expect((await call(`${emu.baseUrl}/voiceprint`, 'POST', { form: form({ name: ok32 }, wavFile(wavTone(1))) })).status).toBe(200);
    const tooLong = '张'.repeat(11); // 33 bytes, 11 characters
    const long = await call(`${emu.baseUrl}/voiceprint`, 'POST', { form: form({ name: tooLong }, wavFile(wavTone(1))) });
    expect(long.status).toBe(400);
    expect(long.json().message).toMatch(/33 bytes/);
    const cases: [Record<string, string>, Buffer][] = [
      [{ name: 'x' }, jpegImage()],
      [{ name: 'x' }, Buffer.concat([Buffer.from('ID3\x03\x00'), Buffer.alloc(40000)])],
      [{ name: 'x', format: 'wav' }, pcmTone(1)],
      [{ name: 'x' }, Buffer.concat([pcmTone(1), Buffer.from([1])])],
      [{ name: 'x', sample_rate: '12345' }, pcmTone(1)],
      [{ name: 'x', sample_rate: '8000' }, wavTone(1)],
      [{}, wavTone(1)],
    ];
    for (const [fields, data] of cases) {
      const r = await call(`${emu.baseUrl}/voiceprint`, 'POST', { form: form(fields, { audio: { data, filename: 'a.wav', type: 'audio/wav' } }) });
      expect(r.status, JSON.stringify(fields)).toBe(400);
    }
    expect((await call(`${emu.baseUrl}/voiceprint`, 'POST', { form: form({ name: 'x' }) })).status).toBe(400);
    expect(emu.state.voiceprints()).toHaveLength(1);
  });
});
