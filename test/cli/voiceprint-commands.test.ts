import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync, writeFileSync, writeSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { controlClient, type ControlClient } from '../../src/control/control-client.js';
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
  /** The microphone's infile. */
  input: string;
}

/** `terminal-agent run` on the setup's config, stopped when the test ends; resolves once its control socket is up. */
async function startDaemon(s: Setup): Promise<ControlClient> {
  return (await startDaemonProcess(s)).control;
}

/** startDaemon, with the daemon process, its exit and its JSON log. */
async function startDaemonProcess(s: Setup) {
  const daemon = spawn(process.execPath, [CLI_ENTRY, 'run', '--config', s.configPath], { env: s.alsaEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  daemon.stdout.setEncoding('utf8').on('data', (t: string) => (log += t));
  daemon.stderr.resume();
  const exit = new Promise<number | null>((resolve) => daemon.once('close', resolve));
  onTestFinished(async () => {
    if (daemon.exitCode === null) {
      const exited = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await exited;
    }
  });
  const socket = join(s.dir, 'control.sock');
  for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(100);
  expect(existsSync(socket)).toBe(true);
  const logs = () => log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; [k: string]: unknown });
  return { control: controlClient(socket, { timeoutMs: 5000 }), daemon, exit, logs };
}

/**
 * A microphone that gives 1 s of speech, then nothing until the test ends: a FIFO as the file
 * plugin's infile, held open here, so arecord blocks as it would mid-recording on a real card.
 */
function heldMicrophone(): string {
  const path = join(work.dir, `held-mic-${++fifos}.raw`);
  execFileSync('mkfifo', [path]);
  const fd = openSync(path, 'r+'); // read-write: opening does not wait for the recorder
  writeSync(fd, readFileSync(inputs.speech).subarray(0, 32000));
  onTestFinished(() => closeSync(fd));
  return path;
}
let fifos = 0;

/** Whether a process other than this one has `path` open (the recorder reading the held microphone). */
function otherProcessHolds(path: string): boolean {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid)) {
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`) === path)) return true;
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return false;
}

/** `voiceprint enroll` as a child the test can interrupt. */
function enrollChild(s: Setup, name: string, seconds: string, extra: string[] = []) {
  const child = spawn(process.execPath, [CLI_ENTRY, 'voiceprint', 'enroll', '--name', name, '--seconds', seconds, '--config', s.configPath, ...extra], { env: { PATH: process.env.PATH ?? '', ALSA_CONFIG_PATH: s.alsaEnv.ALSA_CONFIG_PATH } });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (t: string) => (out.stdout += t));
  child.stderr.setEncoding('utf8').on('data', (t: string) => (out.stderr += t));
  const exit = new Promise<number | null>((resolve) => child.once('close', resolve));
  onTestFinished(() => void child.kill('SIGKILL'));
  return { child, out, exit };
}

/** Enrolls `name` for 2 s, the service holding the upload for 2 s, and sends SIGINT once it arrived there. */
async function interruptUpload(s: Setup, name: string, extra: string[] = []) {
  s.emulator.faults.add({ method: 'POST', path: '/voiceprint', action: 'delay', delayMs: 2000, times: 1 });
  const cli = enrollChild(s, name, '2', extra);
  await until('the upload', () => s.emulator.requests.some((q) => q.path === '/voiceprint'));
  cli.child.kill('SIGINT');
  return { code: await cli.exit, out: cli.out };
}

async function until(what: string, test: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

type VoiceStatus = { state: string; current: { name: string; phase: string } | null };
const voiceOf = async (daemon: ControlClient) => (await daemon.status()).audio.voice as VoiceStatus;

function expectNothingKept(s: Setup): void {
  expect(s.emulator.requests.filter((q) => q.path === '/voiceprint')).toHaveLength(0);
  const audits = join(s.dir, 'state', 'voiceprints');
  expect(existsSync(audits) ? readdirSync(audits) : []).toEqual([]);
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
  return { emulator, run, dir, configPath, alsaEnv: mic.env, input };
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
    const s = await setup();
    const { emulator, run } = s;
    await startDaemon(s);

    const r = await run('voiceprint', 'enroll', '--name', 'hana', '--seconds', '2');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^recording 2 s through the daemon: speak now\nregistered voiceprint "hana": vp_/);
    expect(emulator.state.voiceprints().map((v) => v.name)).toEqual(['hana']);
    const rows = JSON.parse((await run('voiceprint', 'list', '--json')).stdout) as Array<{ name: string; source: string }>;
    expect(rows).toEqual([expect.objectContaining({ name: 'hana', source: 'enroll' })]);
  });

  it('Ctrl-C of enroll through the daemon stops the recording at once: exit 1, nothing sent or kept, the daemon idle again', async () => {
    const s = await setup(heldMicrophone());
    const daemon = await startDaemon(s);
    const cli = enrollChild(s, 'ivy', '5');
    await until('the daemon to record', async () => (await voiceOf(daemon)).current?.phase === 'recording');
    const t0 = Date.now();
    cli.child.kill('SIGINT');
    expect(await cli.exit).toBe(1);
    // Before, the CLI waited for the recorder: 5 s plus its 10 s stall grace on this microphone.
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(cli.out.stderr).toBe("terminal-agent: interrupted: SIGINT; the daemon stopped the recording of 'ivy': nothing was sent or registered [TA_ERR_ABORTED]\n");
    await until('the daemon to stop recording', async () => (await voiceOf(daemon)).state === 'idle', 3000);
    expect((await daemon.status()).audio.voice).toMatchObject({ last: { name: 'ivy', ok: false, code: 'TA_ERR_ABORTED', error: 'recording cancelled: caller hung up' } });
    expectNothingKept(s);
    expect(JSON.parse((await s.run('voiceprint', 'list', '--json')).stdout)).toEqual([]);
  });

  it('Ctrl-C of enroll through the daemon once the upload started: the daemon completes the registration, which list shows', async () => {
    const s = await setup();
    const daemon = await startDaemon(s);
    const cli = await interruptUpload(s, 'jon');
    expect(cli.code).toBe(1);
    expect(cli.out.stderr).toBe("terminal-agent: interrupted: SIGINT; the recording of 'jon' was already being sent: the daemon completes its registration, and 'voiceprint list' shows it once the service answered [TA_ERR_ABORTED]\n");
    await until('the registration', async () => (await voiceOf(daemon)).state === 'idle', 10_000);
    const [stored] = s.emulator.state.voiceprints();
    expect(stored).toMatchObject({ name: 'jon' });
    const rows = JSON.parse((await s.run('voiceprint', 'list', '--json')).stdout) as Array<{ voiceprint_id: string; audit_wav: string }>;
    expect(rows).toEqual([expect.objectContaining({ voiceprint_id: stored!.voiceprint_id, name: 'jon', source: 'enroll' })]);
    expect(existsSync(rows[0]!.audit_wav)).toBe(true);
  });

  it('SIGTERM of the daemon while it sends a recording: the upload is finished, the CLI prints it, list shows it, the daemon exits 0', async () => {
    const s = await setup();
    const { daemon, exit, logs } = await startDaemonProcess(s);
    // Longer than the 5 s the control socket gives a connection with nothing being answered.
    s.emulator.faults.add({ method: 'POST', path: '/voiceprint', action: 'delay', delayMs: 6000, times: 1 });
    const cli = enrollChild(s, 'max', '2');
    await until('the upload', () => s.emulator.requests.some((q) => q.path === '/voiceprint'));
    const t0 = Date.now();
    daemon.kill('SIGTERM');
    expect(await cli.exit, cli.out.stderr).toBe(0);
    expect(await exit).toBe(0);
    expect(Date.now() - t0).toBeLessThan(20_000);
    const [stored] = s.emulator.state.voiceprints();
    expect(stored).toMatchObject({ name: 'max' });
    expect(cli.out.stderr).toBe('');
    expect(cli.out.stdout).toMatch(new RegExp(`^recording 2 s through the daemon: speak now\nregistered voiceprint "max": ${stored!.voiceprint_id}\n`));
    expect(logs()).toContainEqual(expect.objectContaining({ msg: 'stopping: waiting for the service to answer the voiceprint upload under way, so that it is listed', name: 'max' }));
    const rows = JSON.parse((await s.run('voiceprint', 'list', '--json')).stdout) as Array<{ voiceprint_id: string }>;
    expect(rows).toEqual([expect.objectContaining({ voiceprint_id: stored!.voiceprint_id, name: 'max', source: 'enroll' })]);
  });

  it('Ctrl-C of enroll with no daemon: the same outcomes (a recording stops with exit 1; an upload under way is finished and printed)', async () => {
    const held = await setup(heldMicrophone());
    const recording = enrollChild(held, 'kim', '5');
    await until('the recorder to open the microphone', () => otherProcessHolds(held.input));
    const t0 = Date.now();
    recording.child.kill('SIGINT');
    expect(await recording.exit).toBe(1);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(recording.out.stderr).toBe("terminal-agent: interrupted: SIGINT; the recording of 'kim' stopped: nothing was sent or registered [TA_ERR_ABORTED]\n");
    expectNothingKept(held);

    const s = await setup();
    const uploading = await interruptUpload(s, 'lou');
    expect(uploading.code).toBe(0);
    expect(uploading.out.stderr).toBe("interrupted: SIGINT; the recording of 'lou' was already being sent: waiting for the service's answer so that it is listed (Ctrl-C again to leave at once)\n");
    const [stored] = s.emulator.state.voiceprints();
    expect(uploading.out.stdout).toContain(`registered voiceprint "lou": ${stored!.voiceprint_id}`);
    expect(JSON.parse((await s.run('voiceprint', 'list', '--json')).stdout)).toEqual([expect.objectContaining({ voiceprint_id: stored!.voiceprint_id, name: 'lou' })]);
  });

  it('Ctrl-C of enroll --json with no daemon during the upload: no text note on stderr, the JSON result on stdout', async () => {
    const s = await setup();
    const uploading = await interruptUpload(s, 'mia', ['--json']);
    expect(uploading.code).toBe(0);
    // stderr in --json mode carries only the JSON error line of a failed command.
    expect(uploading.out.stderr).toBe('');
    const [stored] = s.emulator.state.voiceprints();
    expect(JSON.parse(uploading.out.stdout)).toMatchObject({ name: 'mia', voiceprint_id: stored!.voiceprint_id });
    expect(JSON.parse((await s.run('voiceprint', 'list', '--json')).stdout)).toEqual([expect.objectContaining({ voiceprint_id: stored!.voiceprint_id, name: 'mia' })]);
  });

  it('a second Ctrl-C while enroll waits for the service leaves at once with exit 130 and says so, as a JSON line with --json', async () => {
    for (const json of [false, true]) {
      const s = await setup();
      // The service holds the upload far longer than the test waits.
      s.emulator.faults.add({ method: 'POST', path: '/voiceprint', action: 'delay', delayMs: 30_000, times: 1 });
      const cli = enrollChild(s, json ? 'nia' : 'ned', '2', json ? ['--json'] : []);
      await until('the upload', () => s.emulator.requests.some((q) => q.path === '/voiceprint'));
      cli.child.kill('SIGINT');
      // The first signal is handled before the second is sent (two pending SIGINTs would be one).
      if (json) await sleep(300);
      else await until('the note of the first Ctrl-C', () => cli.out.stderr.includes('Ctrl-C again to leave at once'));
      const t0 = Date.now();
      cli.child.kill('SIGINT');
      expect(await cli.exit, cli.out.stderr).toBe(130);
      expect(Date.now() - t0).toBeLessThan(2000);
      if (json) {
        const lines = cli.out.stderr.trimEnd().split('\n');
        expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([{ error: 'second SIGINT, exiting at once', code: 'TA_ERR_ABORTED' }]);
      } else {
        expect(cli.out.stderr.split('\n').slice(-2)).toEqual(['terminal-agent: second SIGINT, exiting at once', '']);
      }
      expect(cli.out.stdout).not.toContain('registered voiceprint');
    }
  });
});
