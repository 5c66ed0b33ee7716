import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeWav } from '../../src/audio/wav.js';
import { alsaCaptureDevice, makeCaptureInputs, type CaptureInputs } from '../helpers/alsa-capture.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { runCliProcess } from '../helpers/cli.js';
import { tmpDir, tmpDirManual } from '../helpers/tmp.js';

// The commands as an operator runs them (node dist/main.js; build first), with no daemon running:
// `voiceprint enroll` records in-process from an ALSA file-plugin microphone.

let work: { dir: string; remove(): void };
let inputs: CaptureInputs;

beforeAll(() => {
  work = tmpDirManual('ta-vp-cli-');
  inputs = makeCaptureInputs(work.dir);
});
afterAll(() => work.remove());

async function setup(input = inputs.speech): Promise<{ emulator: Emulator; run: (...args: string[]) => ReturnType<typeof runCliProcess>; dir: string }> {
  const emulator = await startTestEmulator();
  const dir = tmpDir('ta-vp-');
  const mic = alsaCaptureDevice(dir, input);
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, [
    'service:',
    `  base_url: ${emulator.baseUrl}`,
    `  face_base_url: ${emulator.faceBaseUrl}`,
    `  terminal_secret: ${emulator.terminals[0]!.terminal_secret}`,
    `state_dir: ${join(dir, 'state')}`,
    'audio:',
    `  input_device: ${mic.device}`,
    'voiceprint:',
    '  seconds: 4',
    'speaker_training:',
    '  poll_interval: 100ms',
    'control:',
    `  socket: ${join(dir, 'control.sock')}`,
    '',
  ].join('\n'));
  const run = (...args: string[]) => runCliProcess([...args, '--config', configPath], { env: { ALSA_CONFIG_PATH: mic.env.ALSA_CONFIG_PATH } });
  return { emulator, run, dir };
}

describe('voiceprint commands', () => {
  it('enroll records and registers, list shows it, delete removes it here and on the service', async () => {
    const { emulator, run } = await setup();
    const enrolled = await run('voiceprint', 'enroll', '--name', 'dana', '--seconds', '2', '--json');
    expect(enrolled.stderr).toBe('');
    expect(enrolled.code).toBe(0);
    const result = JSON.parse(enrolled.stdout) as { voiceprint_id: string; sent: { seconds: number }; audit: { file: string } };
    expect(result.sent.seconds).toBe(2);
    expect(emulator.state.voiceprints()).toEqual([expect.objectContaining({ voiceprint_id: result.voiceprint_id, name: 'dana' })]);
    expect(emulator.state.voiceprints()[0]!.info).toMatchObject({ duration_ms: 2000, sample_rate: 16000, format: 'wav' });

    const listed = await run('voiceprint', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^VOICEPRINT_ID\\s+NAME\\s+SOURCE\\s+SECONDS\\s+CREATED\\n${result.voiceprint_id}\\s+dana\\s+enroll\\s+2\\.0\\s`));

    const deleted = await run('voiceprint', 'delete', result.voiceprint_id);
    expect(deleted.code).toBe(0);
    expect(emulator.state.voiceprints()).toHaveLength(0);
    expect((await run('voiceprint', 'list')).stdout).toBe('(no voiceprints registered from this terminal)\n');
  });

  it('register FILE checks the WAV, sends its real layout and records it in the registry with an audit copy', async () => {
    const { emulator, run, dir } = await setup();
    const wav = join(dir, 'erin.wav');
    writeFileSync(wav, encodeWav({ sampleRate: 16000, channels: 1, bitsPerSample: 16 }, readFileSync(inputs.speech).subarray(0, 3 * 32000)));
    const registered = await run('voiceprint', 'register', '--name', 'erin', wav);
    expect(registered.code).toBe(0);
    const [stored] = emulator.state.voiceprints();
    expect(stored!.info).toMatchObject({ name: 'erin', format: 'wav', sample_rate: 16000, channel: 1, duration_ms: 3000 });
    const rows = JSON.parse((await run('voiceprint', 'list', '--json')).stdout) as Array<{ voiceprint_id: string; source: string; audit_wav: string }>;
    expect(rows).toEqual([expect.objectContaining({ voiceprint_id: stored!.voiceprint_id, source: 'cli' })]);
    expect(readFileSync(rows[0]!.audit_wav).equals(readFileSync(wav))).toBe(true);

    const broken = join(dir, 'broken.wav');
    writeFileSync(broken, readFileSync(wav).subarray(0, 20000));
    const refused = await run('voiceprint', 'register', '--name', 'frank', broken);
    expect(refused.code).toBe(65);
    expect(refused.stderr).toMatch(/the file is truncated/);
    expect(emulator.state.voiceprints()).toHaveLength(1);
  });

  it('enroll of silence exits 65 with the measured level and sends nothing', async () => {
    const { emulator, run } = await setup(inputs.silence);
    const r = await run('voiceprint', 'enroll', '--name', 'gus');
    expect(r.code).toBe(65);
    expect(r.stderr).toMatch(/is silent \(peak -inf dBFS.*\[TA_ERR_AUDIO_QUALITY\]/);
    expect(emulator.requests.filter((q) => q.path === '/voiceprint')).toHaveLength(0);
  });

  it('enroll refuses a long name before recording (exit 65)', async () => {
    const { emulator, run } = await setup();
    const r = await run('voiceprint', 'enroll', '--name', 'x'.repeat(33));
    expect(r.code).toBe(65);
    expect(r.stderr).toMatch(/33 bytes in UTF-8; the service accepts at most 32 bytes/);
    expect(emulator.requests).toHaveLength(0);
  });

  it('speaker train uses the same WAV check (exit 65, nothing sent) and --wait follows the training to the end', async () => {
    const { emulator, run, dir } = await setup();
    const placeholder = join(dir, 'streamed.wav');
    const streamed = encodeWav({ sampleRate: 16000, channels: 1, bitsPerSample: 16 }, readFileSync(inputs.speech).subarray(0, 3 * 32000));
    streamed.writeUInt32LE(0xffffffff, 40);
    writeFileSync(placeholder, streamed);
    const refused = await run('speaker', 'train', '--model', 'tts-turbo', '--text', 'hello', placeholder);
    expect(refused.code).toBe(65);
    expect(refused.stderr).toMatch(/placeholder sizes \(a streamed recording\); rewrite it with `sox IN.wav OUT.wav`/);
    expect(emulator.requests).toHaveLength(0);

    const good = join(dir, 'reader.wav');
    writeFileSync(good, encodeWav({ sampleRate: 16000, channels: 1, bitsPerSample: 16 }, readFileSync(inputs.speech).subarray(0, 3 * 32000)));
    const trained = await run('speaker', 'train', '--model', 'tts-turbo', '--text', 'hello', good, '--wait');
    expect(trained.stderr).toBe('');
    expect(trained.code).toBe(0);
    expect(trained.stdout).toMatch(/: trained\n$/);
    expect(emulator.requests.filter((q) => q.method === 'GET' && q.path === '/train_speaker').length).toBeGreaterThanOrEqual(1);
  });
});
