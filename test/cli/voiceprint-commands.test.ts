import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { encodeWav } from '../../src/audio/wav.js';
import { alsaCaptureDevice, makeCaptureInputs, type CaptureInputs } from '../helpers/alsa-capture.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { CLI_ENTRY, runCliProcess } from '../helpers/cli.js';
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

interface Setup {
  emulator: Emulator;
  run: (...args: string[]) => ReturnType<typeof runCliProcess>;
  dir: string;
  configPath: string;
  alsaEnv: NodeJS.ProcessEnv;
}

async function setup(input = inputs.speech): Promise<Setup> {
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
  return { emulator, run, dir, configPath, alsaEnv: mic.env };
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

  it('enroll goes through the running daemon (POST /voiceprint/enroll) when one answers on control.socket', async () => {
    const { emulator, run, dir, configPath, alsaEnv } = await setup();
    const daemon = spawn(process.execPath, [CLI_ENTRY, 'run', '--config', configPath], { env: alsaEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    onTestFinished(async () => {
      if (daemon.exitCode === null) {
        const exited = new Promise((resolve) => daemon.once('exit', resolve));
        daemon.kill('SIGTERM');
        await exited;
      }
    });
    const socket = join(dir, 'control.sock');
    for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(100);
    expect(existsSync(socket)).toBe(true);

    const r = await run('voiceprint', 'enroll', '--name', 'hana', '--seconds', '2');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^recording 2 s through the daemon: speak now\nregistered voiceprint "hana": vp_/);
    expect(emulator.state.voiceprints().map((v) => v.name)).toEqual(['hana']);
    const rows = JSON.parse((await run('voiceprint', 'list', '--json')).stdout) as Array<{ name: string; source: string }>;
    expect(rows).toEqual([expect.objectContaining({ name: 'hana', source: 'enroll' })]);
  });
});
