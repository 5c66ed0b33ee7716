import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSpeakerRegistry } from '../../src/enroll/index.js';
import { createVoiceprintRegistry } from '../../src/voiceprint/registry.js';
import { runCliProcess } from '../helpers/cli.js';
import { pcm, put, readJson, startRig, waitFor, wav } from './fixtures.js';

describe('voiceprints/ inbox', () => {
  it('registers NAME.wav and keeps voiceprint_id and name in the local registry', async () => {
    const rig = await startRig();
    await put(rig.dir, 'voiceprints/grace.wav', wav(1, 16000));
    await waitFor('done json', () => existsSync(join(rig.dir, 'done/voiceprints/grace.json')));
    const [registered] = rig.emulator.state.voiceprints();
    expect(registered?.name).toBe('grace');
    const result = readJson(join(rig.dir, 'done/voiceprints/grace.json'));
    expect(result.voiceprint_id).toBe(registered!.voiceprint_id);
    const local = createVoiceprintRegistry(rig.db).list();
    expect(local).toMatchObject([{ voiceprint_id: registered!.voiceprint_id, name: 'grace', source: 'folder', sample_rate: 16000, channels: 1 }]);
  });

  it('wraps raw NAME.pcm in a WAV header with the configured sample rate', async () => {
    const rig = await startRig({ config: { voiceprint: { sample_rate: 8000 } } });
    await put(rig.dir, 'voiceprints/heidi.pcm', pcm(1, 8000));
    await waitFor('done json', () => existsSync(join(rig.dir, 'done/voiceprints/heidi.json')));
    const [registered] = rig.emulator.state.voiceprints();
    expect(registered?.info).toMatchObject({ sample_rate: 8000, channel: 1, format: 'wav', duration_ms: 1000 });
    expect(existsSync(join(rig.dir, 'done/voiceprints/heidi.pcm'))).toBe(true);
  });
});

describe('speakers/ inbox', () => {
  it('trains LABEL.wav with LABEL.txt, follows the status until 1, then writes done/speakers/LABEL.json', async () => {
    // Training takes 1.5 s (the test emulator's default 200 ms could be over before the first poll
    // on a loaded machine, and then no poll would see it in training).
    const rig = await startRig({ emulator: { trainMs: 1500 } });
    await put(rig.dir, 'speakers/ivan.txt', 'the quick brown fox\n');
    await put(rig.dir, 'speakers/ivan.wav', wav(1));
    await waitFor('done json', () => existsSync(join(rig.dir, 'done/speakers/ivan.json')));
    const [trained] = rig.emulator.state.speakers();
    expect(trained).toMatchObject({ audio_text: 'the quick brown fox', status: 1 });
    expect(readJson(join(rig.dir, 'done/speakers/ivan.json'))).toMatchObject({ speaker_id: trained!.speaker_id, model: 'tts-turbo', status: 1 });
    expect(existsSync(join(rig.dir, 'done/speakers/ivan.txt'))).toBe(true);
    // Status was followed: at least one GET /train_speaker saw it in training, then one saw it done.
    expect(rig.emulator.requests.filter((r) => r.method === 'GET' && r.path === '/train_speaker').length).toBeGreaterThanOrEqual(2);
    expect(createSpeakerRegistry(rig.db).list()).toMatchObject([{ speaker_id: trained!.speaker_id, model: 'tts-turbo', label: 'ivan', status: 1 }]);

    // `speaker list` reads the same registry, with no network.
    const yaml = join(rig.config.state_dir, 'config.yaml');
    await writeFile(yaml, `service:\n  base_url: http://127.0.0.1:9\n  face_base_url: http://127.0.0.1:9/v1/api\nstate_dir: ${rig.config.state_dir}\n`);
    const env = { TERMINAL_AGENT_TERMINAL_SECRET: 'not-used-by-speaker-list' };
    const json = await runCliProcess(['speaker', 'list', '--json', '--config', yaml], { env });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject([{ speaker_id: trained!.speaker_id, model: 'tts-turbo', label: 'ivan', status: 1, status_text: 'ready' }]);
    const text = await runCliProcess(['speaker', 'list', '--config', yaml], { env });
    expect(text.stdout).toMatch(new RegExp(`${trained!.speaker_id}\\s+tts-turbo\\s+ivan\\s+ready`));
  });

  it('fails a speaker whose training does not finish within poll_timeout', async () => {
    const rig = await startRig({ emulator: { trainMs: 60_000 }, config: { speaker_training: { poll_timeout: 400 } } });
    await put(rig.dir, 'speakers/judy.txt', 'hello');
    await put(rig.dir, 'speakers/judy.wav', wav(1));
    await waitFor('error json', () => existsSync(join(rig.dir, 'failed/speakers/judy.error.json')));
    expect(readJson(join(rig.dir, 'failed/speakers/judy.error.json'))).toMatchObject({ code: 'TA_ERR_TRAINING_TIMEOUT', attempts: 1 });
    expect(createSpeakerRegistry(rig.db).list()).toMatchObject([{ label: 'judy', status: 0 }]);
  });
});
