import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { tmpDir } from '../helpers/tmp.js';
import { pngImage, wavTone } from './fixtures.js';
import { call, form } from './http.js';

describe('emulator state under --data', () => {
  it('keeps faces, images, speakers and voiceprints across a restart; numeric ids keep growing', async () => {
    const dataDir = tmpDir();
    const terminals = [{ terminal_secret: 'persist-secret-1', group_id: 'g1' }];
    const first = await startEmulator({ dataDir, terminals, trainMs: 0 });
    const token = 'persist-secret-1';
    try {
      await call(`${first.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Ada' }, { image: { data: pngImage(), filename: 'a.png', type: 'image/png' } }) });
      await call(`${first.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Bob' }, { image: { data: pngImage(3, 3), filename: 'b.png', type: 'image/png' } }) });
      await call(`${first.faceBaseUrl}/faces/${first.state.faces()[1]!.face_id}`, 'DELETE', { token });
      await call(`${first.baseUrl}/train_speaker`, 'POST', { form: form({ model: 'tts-pro', audio_text: 'x' }, { audio: { data: wavTone(1), filename: 's.wav', type: 'audio/wav' } }) });
      await call(`${first.baseUrl}/voiceprint`, 'POST', { form: form({ name: 'Ada' }, { audio: { data: wavTone(1), filename: 'v.wav', type: 'audio/wav' } }) });
    } finally {
      await first.close();
    }
    const second = await startEmulator({ dataDir, terminals, trainMs: 0 });
    try {
      const [ada] = second.state.faces();
      expect(second.state.faces()).toEqual([{ face_id: ada!.face_id, group_id: 'g1', id: 1, name: 'Ada' }]);
      const img = await call(`${second.faceBaseUrl}/faces/${ada!.face_id}/image`, 'GET', { token });
      expect(img.body.equals(pngImage())).toBe(true);
      await call(`${second.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Cy' }, { image: { data: pngImage(), filename: 'c.png', type: 'image/png' } }) });
      expect(second.state.faces().map((f) => f.id)).toEqual([1, 3]);
      const [speaker] = second.state.speakers();
      expect(speaker).toMatchObject({ model: 'tts-pro', status: 1 });
      expect((await call(`${second.baseUrl}/train_speaker?model=tts-pro&speaker_id=${speaker!.speaker_id}`, 'GET')).json().status).toBe(1);
      const [vp] = second.state.voiceprints();
      expect((await call(`${second.baseUrl}/voiceprint`, 'DELETE', { json: { voiceprint_id: vp!.voiceprint_id } })).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('keeps nothing without --data', async () => {
    const first = await startEmulator({ terminals: [{ terminal_secret: 'mem-secret-1', group_id: 'g' }] });
    await call(`${first.faceBaseUrl}/faces`, 'POST', { token: 'mem-secret-1', form: form({ name: 'Ada' }, { image: { data: pngImage(), filename: 'a.png', type: 'image/png' } }) });
    expect(first.state.faces()).toHaveLength(1);
    await first.close();
    await first.close();
    const second = await startEmulator({ terminals: [{ terminal_secret: 'mem-secret-1', group_id: 'g' }] });
    expect(second.state.faces()).toEqual([]);
    await second.close();
  });
});
