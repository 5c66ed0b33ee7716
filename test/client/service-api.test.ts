import { describe, expect, it, beforeAll } from 'vitest';
import { startRig, writeFixture, writeWav, TEST_UA, type Rig } from './fixtures.js';
import { tmpDirManual } from '../helpers/tmp.js';
import {
  AuthError, BadRequestError, BadResponseError, InvalidInputError, NotFoundError,
} from '../../src/errors.js';

// Knowledge, notify, tts, voices, speaker training and voiceprints against the emulator.

let rig: Rig;
let dir: string;
beforeAll(async () => {
  rig = await startRig();
  const tmp = tmpDirManual('ta-client-api-');
  dir = tmp.dir;
  return () => tmp.remove();
});

const lastRequest = () => rig.emu.requests.at(-1)!;

describe('knowledge (Bearer api_key)', () => {
  it('adds an entry as JSON and deletes it; the service keeps what was sent', async () => {
    const res = await rig.client.addKnowledge({ id: 'kb-1', title: 'Hours', content: 'Open 9 to 5.' });
    expect(res).toMatchObject({ code: 0 });
    expect(lastRequest()).toMatchObject({ method: 'POST', path: '/knowledge', auth: 'api_key', contentType: 'application/json', userAgent: TEST_UA });
    expect(rig.emu.state.knowledge()).toContainEqual({ id: 'kb-1', title: 'Hours', content: 'Open 9 to 5.' });
    await rig.client.deleteKnowledge('kb-1');
    expect(lastRequest()).toMatchObject({ method: 'DELETE', path: '/knowledge/kb-1', status: 200 });
    expect(rig.emu.state.knowledge().find((k) => k.id === 'kb-1')).toBeUndefined();
  });

  it('404 for an unknown id, 400 for no content, 401 for a wrong key naming service.api_key', async () => {
    await expect(rig.client.deleteKnowledge('no-such-entry')).rejects.toMatchObject({ status: 404, code: 'TA_ERR_NOT_FOUND' });
    await expect(rig.client.addKnowledge({ content: '' })).rejects.toBeInstanceOf(InvalidInputError);
    const wrong = 'not-the-api-key-987654';
    const err = await rig.clientWith({ api_key: wrong }).addKnowledge({ content: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthError);
    expect((err as Error).message).toContain('service.api_key');
    expect((err as Error).message).not.toContain(wrong);
  });

  it('encodes an id with reserved characters as one path segment', async () => {
    await rig.client.addKnowledge({ id: 'a/b c', content: 'odd id' });
    await rig.client.deleteKnowledge('a/b c');
    expect(lastRequest()).toMatchObject({ path: expect.stringMatching(/^\/knowledge\/a(%2F|\/)b(%20| )c$/), status: 200 });
  });
});

describe('notifications (no credential by default)', () => {
  it('notifies an agent change and a knowledge change', async () => {
    expect(await rig.client.notifyAgent('agent-7')).toMatchObject({ code: 0, message: expect.any(String) });
    expect(lastRequest()).toMatchObject({ method: 'POST', path: '/agent/notify', auth: 'none', contentType: 'application/json' });
    expect(await rig.client.notifyKnowledge()).toMatchObject({ code: 0 });
    await rig.client.notifyKnowledge({ reason: 'edit' });
    const notes = rig.emu.state.notifications();
    expect(notes.map((n) => [n.kind, n.body])).toEqual(expect.arrayContaining([['agent', { agent_id: 'agent-7' }], ['knowledge', {}], ['knowledge', { reason: 'edit' }]]));
  });

  it('a 2xx carrying a non-zero code is a failure with the server message', async () => {
    rig.emu.faults.add({ method: 'POST', path: '/agent/notify', action: 'json' });
    const err = await rig.client.notifyAgent('agent-7').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect(err).toMatchObject({ status: 200, operation: 'POST /agent/notify' });
    expect((err as Error).message).toMatch(/code -?[1-9]/);
  });

  it('sends the credential chosen by service.other_auth', async () => {
    await rig.clientWith({ other_auth: 'api_key' }).notifyKnowledge();
    expect(lastRequest()).toMatchObject({ path: '/knowledge/notify', auth: 'api_key' });
    await rig.clientWith({ other_auth: 'terminal_secret' }).notifyKnowledge();
    expect(lastRequest()).toMatchObject({ path: '/knowledge/notify', auth: 'terminal_secret' });
  });
});

describe('speech synthesis and voices', () => {
  it('synthesize returns the WAV stream as soon as headers arrive', async () => {
    const res = await rig.client.synthesize({ text: 'hello there', volume_ratio: 60 });
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/^audio\/wav/);
    const chunks: Buffer[] = [];
    for await (const c of res.body) chunks.push(c as Buffer);
    const wav = Buffer.concat(chunks);
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.toString('latin1', 8, 12)).toBe('WAVE');
    expect(wav.length).toBeGreaterThan(1000);
  });

  it('cancel() frees the stream part-way', async () => {
    const res = await rig.client.synthesize({ text: 'a longer sentence to have something to cancel' });
    await res.cancel();
    expect(res.body.destroyed).toBe(true);
  });

  it('400 for an empty text is refused locally; a JSON 200 instead of audio is BadResponseError', async () => {
    await expect(rig.client.synthesize({ text: '  ' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(rig.client.synthesize({ text: 'x', pitch_ratio: 101 })).rejects.toBeInstanceOf(InvalidInputError);
    rig.emu.faults.add({ method: 'POST', path: '/tts', action: 'json' });
    await expect(rig.client.synthesize({ text: 'hello' })).rejects.toBeInstanceOf(BadResponseError);
  });

  it('lists voices with filters and paging', async () => {
    const first = await rig.client.listVoices();
    expect(first.speakers.length).toBe(10);
    expect(first.speakers_count).toBe(10);
    expect(first.total_speakers_count).toBeGreaterThanOrEqual(40);
    expect(first.speakers[0]).toEqual(expect.objectContaining({ name: expect.any(String), voice: expect.any(String) }));

    const female = await rig.client.listVoices({ gender: 'female', language: 'english', top: 100, all: true });
    expect(female.speakers.length).toBeGreaterThan(0);
    for (const v of female.speakers) expect(v).toMatchObject({ gender: 'female' });
    expect(lastRequest().query).toMatchObject({ gender: 'female', language: 'english', top: '100', all: 'true' });

    const page2 = await rig.client.listVoices({ skip: 10, top: 5 });
    expect(page2.speakers.map((v) => v.voice)).not.toContain(first.speakers[0]!.voice);
    expect(page2.speakers.length).toBe(5);
  });
});

describe('speaker training', () => {
  it('trains, reports status 0 then 1, deletes; -1 for an unknown speaker', async () => {
    const wav = writeWav(dir, 'sample.wav', 1.5);
    const created = await rig.client.trainSpeaker({ audio: { path: wav, contentType: 'audio/wav' }, model: 'tts-turbo', audioText: 'hello world' });
    expect(created).toMatchObject({ code: 0, speaker_id: expect.any(String) });
    expect(lastRequest()).toMatchObject({ method: 'POST', path: '/train_speaker', status: 200 });
    const s0 = await rig.client.speakerStatus('tts-turbo', created.speaker_id);
    expect(s0).toEqual({ model: 'tts-turbo', speaker_id: created.speaker_id, status: 0 });
    // The emulator finishes training after trainMs (300 ms); poll as a caller would.
    let status = 0;
    for (let i = 0; i < 50 && status === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await rig.client.speakerStatus('tts-turbo', created.speaker_id)).status;
    }
    expect(status).toBe(1);
    expect(await rig.client.deleteSpeaker('tts-turbo', created.speaker_id)).toMatchObject({ code: 0 });
    expect(lastRequest()).toMatchObject({ method: 'DELETE', path: '/train_speaker', query: { model: 'tts-turbo', speaker_id: created.speaker_id } });
    expect((await rig.client.speakerStatus('tts-turbo', created.speaker_id)).status).toBe(-1);
  });

  it('an unknown model is the service\'s 400', async () => {
    const wav = writeWav(dir, 'sample2.wav', 1);
    await expect(rig.client.trainSpeaker({ audio: { path: wav, contentType: 'audio/wav' }, model: 'tts-nope', audioText: 'hi' }))
      .rejects.toBeInstanceOf(BadRequestError);
  });
});

describe('voiceprints', () => {
  it('registers (voiceprint_id found in voiceprint_info, else at the top level) and deletes', async () => {
    const wav = writeWav(dir, 'voice.wav', 1);
    const r = await rig.client.registerVoiceprint({ name: 'Ada', audio: { path: wav, contentType: 'audio/wav' }, sampleRate: 16000, channel: 1, format: 'wav' });
    expect(r.code).toBe(0);
    expect(r.voiceprint_id).toEqual(expect.any(String));
    expect(r.voiceprint_info).toBeTypeOf('object');
    expect(rig.emu.state.voiceprints().map((v) => v.voiceprint_id)).toContain(r.voiceprint_id);
    expect(await rig.client.deleteVoiceprint(r.voiceprint_id!)).toMatchObject({ code: 0 });
    expect(lastRequest()).toMatchObject({ method: 'DELETE', path: '/voiceprint', contentType: 'application/json' });
    expect(rig.emu.state.voiceprints().map((v) => v.voiceprint_id)).not.toContain(r.voiceprint_id);
  });

  it('a name over 32 bytes is refused before sending', async () => {
    const before = rig.emu.requests.length;
    const wav = writeWav(dir, 'voice2.wav', 1);
    // 11 three-byte characters: 11 characters, 33 bytes.
    await expect(rig.client.registerVoiceprint({ name: '语'.repeat(11), audio: { path: wav, contentType: 'audio/wav' } }))
      .rejects.toThrow(/33 bytes.*at most 32/);
    expect(rig.emu.requests.length).toBe(before);
  });

  it('audio that is not WAV is refused locally when declared audio/wav, by the service when sent as PCM', async () => {
    const txt = writeFixture(dir, 'x.wav', 'this is text, not audio at all, just bytes');
    await expect(rig.client.registerVoiceprint({ name: 'Bo', audio: { path: txt, contentType: 'audio/wav' } })).rejects.toBeInstanceOf(InvalidInputError);
    const pdf = writeFixture(dir, 'x.pcm', `%PDF-1.4${'x'.repeat(20000)}`);
    await expect(rig.client.registerVoiceprint({ name: 'Bo', audio: { path: pdf, contentType: 'application/octet-stream' }, format: 'pcm' }))
      .rejects.toBeInstanceOf(BadRequestError);
  });

  it('deleting an unknown voiceprint is the service\'s error, typed', async () => {
    const err = await rig.client.deleteVoiceprint('no-such-voiceprint').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
  });
});
