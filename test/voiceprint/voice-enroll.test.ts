import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { createVoiceEnroll, type VoiceEnrollDeps } from '../../src/voiceprint/voice-enroll.js';
import { createVoiceprintRegistry } from '../../src/voiceprint/registry.js';
import { deleteVoiceprintEverywhere } from '../../src/voiceprint/register.js';
import { createServiceClient } from '../../src/client/service-client.js';
import { openDatabase } from '../../src/db/database.js';
import { parseWavHeader } from '../../src/audio/wav.js';
import { silentLogger } from '../../src/log/logger.js';
import { AbortedError, AudioQualityError, BusyError, InvalidInputError, RecorderError } from '../../src/errors.js';
import type { AgentConfig } from '../../src/config/schema.js';
import { alsaCaptureDevice, makeCaptureInputs, type CaptureInputs } from '../helpers/alsa-capture.js';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { makeTestConfig } from '../helpers/config.js';
import { tmpDir, tmpDirManual } from '../helpers/tmp.js';
import { createEventBus, type AgentEvent } from '../../src/events/event-bus.js';

// Real capture (arecord/sox reading ALSA's file plugin), real SQLite, real HTTP to the emulator.

let work: { dir: string; remove(): void };
let inputs: CaptureInputs;

beforeAll(() => {
  work = tmpDirManual('ta-voice-');
  inputs = makeCaptureInputs(work.dir);
});
afterAll(() => work.remove());

interface Setup {
  emulator: Emulator;
  emulatorData: string;
  config: AgentConfig;
  voice: ReturnType<typeof createVoiceEnroll>;
  db: ReturnType<typeof openDatabase>;
  metrics: Registry;
  holds: string[];
  events: AgentEvent[];
}

async function setup(opts: { input?: string; device?: string; env?: NodeJS.ProcessEnv; recorder?: 'arecord' | 'sox'; micWaitMs?: number; recorderGraceMs?: number; uploadStopGraceMs?: number } = {}): Promise<Setup> {
  const emulatorData = tmpDir('ta-emu-');
  const emulator = await startTestEmulator({ dataDir: emulatorData });
  const mic = alsaCaptureDevice(tmpDir('ta-alsa-'), opts.input ?? inputs.speech);
  const config = makeTestConfig({
    service: { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: emulator.terminals[0]!.terminal_secret },
    audio: { input_device: opts.device ?? mic.device },
    voiceprint: { seconds: 3, recorder: opts.recorder ?? 'arecord' },
  });
  const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
  const client = createServiceClient({ config: config.service, logger: silentLogger(), userAgent: 'terminal-agent/test' });
  const metrics = new Registry();
  const holds: string[] = [];
  const events: AgentEvent[] = [];
  const bus = createEventBus();
  bus.subscribe((e) => events.push(e));
  // Stand-in for the speech component's hold(): records when playback is paused and resumed.
  const playback = {
    hold: async () => {
      holds.push(`hold@${emulator.requests.length}`);
      return () => holds.push(`release@${emulator.requests.length}`);
    },
  };
  const deps: VoiceEnrollDeps = { config, db, client, logger: silentLogger(), metrics, playback, events: bus, env: opts.env ?? mic.env, ...(opts.micWaitMs !== undefined ? { micWaitMs: opts.micWaitMs } : {}), ...(opts.recorderGraceMs !== undefined ? { recorderGraceMs: opts.recorderGraceMs } : {}), ...(opts.uploadStopGraceMs !== undefined ? { uploadStopGraceMs: opts.uploadStopGraceMs } : {}) };
  const voice = createVoiceEnroll(deps);
  onTestFinished(async () => {
    await voice.stop();
    await client.close();
    db.close();
  });
  return { emulator, emulatorData, config, voice, db, metrics, holds, events };
}

function voiceprintPosts(s: Setup) {
  return s.emulator.requests.filter((r) => r.method === 'POST' && r.path === '/voiceprint');
}

function auditFiles(s: Setup): string[] {
  const dir = join(s.config.state_dir, 'voiceprints');
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Nothing left the terminal and nothing was recorded as registered. */
function expectNothingRegistered(s: Setup): void {
  expect(voiceprintPosts(s)).toHaveLength(0);
  expect(s.emulator.state.voiceprints()).toHaveLength(0);
  expect(createVoiceprintRegistry(s.db).list()).toHaveLength(0);
  expect(auditFiles(s)).toHaveLength(0);
}

describe('voiceprint enrollment from the microphone', () => {
  it.each(['arecord', 'sox'] as const)('records with %s, sends a WAV with real sizes and matching fields, and keeps registry and audit', async (recorder) => {
    const s = await setup({ recorder });
    const result = await s.voice.enroll({ name: 'Zoë Alvarez' });

    // What the service stored: our fields, and the exact audio we captured.
    const [stored] = s.emulator.state.voiceprints();
    expect(stored).toBeDefined();
    expect(stored!.voiceprint_id).toBe(result.voiceprint_id);
    expect(stored!.info).toMatchObject({ name: 'Zoë Alvarez', sample_rate: 16000, channel: 1, format: 'wav', model: 'voiceprint-turbo', duration_ms: 3000 });
    expect(voiceprintPosts(s)).toHaveLength(1);
    expect(voiceprintPosts(s)[0]!.status).toBe(200);

    const sent = readFileSync(result.audit.file);
    const blob = readFileSync(join(s.emulatorData, 'blobs', createHash('sha256').update(sent).digest('hex')));
    expect(blob.equals(sent)).toBe(true);
    const header = parseWavHeader(blob);
    expect(header).toMatchObject({ sampleRate: 16000, channels: 1, bitsPerSample: 16, dataBytes: 3 * 16000 * 2, dataOffset: 44, placeholderSizes: false });
    expect(blob.length).toBe(44 + 96000);
    expect(blob.subarray(44).equals(readFileSync(inputs.speech).subarray(0, 96000))).toBe(true);

    expect(result.sent).toEqual({ sample_rate: 16000, channel: 1, format: 'wav', model: 'voiceprint-turbo', bytes: 96044, seconds: 3 });
    expect(result.levels).toMatch(/^peak -?\d+ dBFS, level -\d+ dBFS, speech in \d+% of frames$/);

    const rows = createVoiceprintRegistry(s.db).list();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ voiceprint_id: result.voiceprint_id, name: 'Zoë Alvarez', source: 'enroll', sample_rate: 16000, channels: 1, seconds: 3, audit_wav: result.audit.file });
    const audit = JSON.parse(readFileSync(result.audit.json, 'utf8')) as Record<string, unknown>;
    expect(audit).toMatchObject({ ok: true, voiceprint_id: result.voiceprint_id, name: 'Zoë Alvarez', source: 'enroll' });

    // Playback was paused for the recording and resumed before the upload.
    expect(s.holds).toEqual(['hold@0', 'release@0']);
    expect(s.voice.status()).toMatchObject({ state: 'idle', registered: 1, totals: { ok: 1, failed: 0 }, last: { ok: true, voiceprint_id: result.voiceprint_id } });
    expect(await s.metrics.getSingleMetricAsString('terminal_agent_voiceprint_enrollments_total')).toMatch(/outcome="ok"} 1/);
    await s.voice.stop();
  });

  it('publishes the level ten times a second while recording, with hints, then the verdict', async () => {
    const s = await setup();
    const result = await s.voice.enroll({ name: 'Ada' });
    const levels = s.events.filter((e) => e.type === 'voiceprint.level').map((e) => e.data as { name: string; elapsed_ms: number; remaining_ms: number; rms_dbfs: number | null; hint: string | null });
    expect(levels).toHaveLength(30); // 3 s in 100 ms windows
    expect(levels.map((l) => l.elapsed_ms)).toEqual(Array.from({ length: 30 }, (_, i) => (i + 1) * 100));
    expect(levels.at(-1)).toMatchObject({ name: 'Ada', remaining_ms: 0 });
    // espeak speech at a normal level: most windows need no hint.
    expect(levels.filter((l) => l.hint === null).length).toBeGreaterThan(10);
    expect(s.events.at(-1)).toMatchObject({ type: 'voiceprint.registered', data: { name: 'Ada', voiceprint_id: result.voiceprint_id } });
  });

  it.each([
    ['a far-away speaker', () => inputs.quiet, 'closer'],
    ['clipped audio', () => inputs.clipped, 'too_loud'],
  ])('hints the person speaking while recording %s, then publishes the failure', async (_label, input, hint) => {
    const s = await setup({ input: input() });
    await s.voice.enroll({ name: 'bob' }).catch(() => undefined);
    const hints = s.events.filter((e) => e.type === 'voiceprint.level').map((e) => e.data.hint);
    expect(hints.filter((h) => h === hint).length).toBeGreaterThan(hints.length / 2);
    expect(s.events.at(-1)).toMatchObject({ type: 'voiceprint.failed', data: { name: 'bob', code: 'TA_ERR_AUDIO_QUALITY' } });
  });

  it.each([
    ['silence', () => inputs.silence, /is silent \(peak -inf dBFS.*plugged in and not muted/],
    ['a far-away speaker', () => inputs.quiet, /too little speech \(peak -45 dBFS, level -6\d dBFS, speech in 0% of frames.*move closer or speak up/],
    ['clipped audio', () => inputs.clipped, /is clipped: \d+% of samples at full scale.*lower the capture gain/],
  ])('refuses %s with the measured levels and registers nothing', async (_label, input, message) => {
    const s = await setup({ input: input() });
    const err = await s.voice.enroll({ name: 'bob' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AudioQualityError);
    expect((err as Error).message).toMatch(message);
    expectNothingRegistered(s);
    expect(s.voice.status()).toMatchObject({ state: 'idle', totals: { ok: 0, failed: 1 }, last: { ok: false, code: 'TA_ERR_AUDIO_QUALITY' } });
  });

  it('names a missing microphone device and registers nothing', async () => {
    const s = await setup({ device: 'usb_mic_absent' });
    const err = await s.voice.enroll({ name: 'bob' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecorderError);
    expect((err as Error).message).toMatch(/microphone device 'usb_mic_absent' cannot be opened.*arecord -L/);
    expectNothingRegistered(s);
    expect(s.holds).toEqual(['hold@0', 'release@0']);
  });

  it('says to install alsa-utils when arecord is not on PATH, without crashing, and registers nothing', async () => {
    const mic = alsaCaptureDevice(tmpDir(), inputs.speech);
    const emptyBin = tmpDir('ta-bin-');
    const s = await setup({ env: { ...mic.env, PATH: emptyBin } });
    const err = await s.voice.enroll({ name: 'bob' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecorderError);
    expect((err as Error).message).toMatch(/'arecord' is not installed.*apt-get install alsa-utils/);
    expectNothingRegistered(s);
  });

  it('reports a recorder that dies half-way and registers nothing', async () => {
    // Stand-in for arecord: a real device cannot be made to fail mid-recording here, so this
    // script writes one second of the speech, prints arecord's read error and exits 1.
    const bin = tmpDir('ta-bin-');
    writeFileSync(join(bin, 'arecord'), `#!/bin/sh\nhead -c 32000 ${JSON.stringify(inputs.speech)}\necho "arecord: pcm_read:2221: read error: Input/output error" >&2\nexit 1\n`);
    chmodSync(join(bin, 'arecord'), 0o755);
    const s = await setup({ env: { PATH: `${bin}:/usr/bin:/bin` } });
    const err = await s.voice.enroll({ name: 'bob' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecorderError);
    expect((err as Error).message).toMatch(/arecord exited with code 1 after 1\.0 s of the 3\.0 s recording from device 'testmic' \(arecord: pcm_read:2221: read error: Input\/output error\); the recording was discarded/);
    expectNothingRegistered(s);
  });

  it('fails a recorder that stalls after it started, kills it, and registers nothing', async () => {
    // Stand-in for arecord: a recorder that stalls cannot be produced on demand with ALSA's file
    // plugin (it delivers the whole file at once), so this script writes a quarter second of
    // speech, notes its pid, then hangs with its output open and silent, as a wedged USB microphone does.
    const bin = tmpDir('ta-bin-');
    const pidFile = join(bin, 'recorder.pid');
    writeFileSync(join(bin, 'arecord'), `#!/bin/sh\necho $$ > ${JSON.stringify(pidFile)}\nhead -c 8000 ${JSON.stringify(inputs.speech)}\nexec sleep 60\n`);
    chmodSync(join(bin, 'arecord'), 0o755);
    // The stall bound is the requested length plus this grace (10 s by default).
    const s = await setup({ env: { PATH: `${bin}:/usr/bin:/bin` }, recorderGraceMs: 500 });
    const err = await s.voice.enroll({ name: 'bob', seconds: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecorderError);
    expect((err as Error).message).toBe("arecord on device 'testmic' did not finish within 1 s plus 0.5 s; the device stalled: reconnect the microphone or check it with `arecord -D testmic -d 2 /tmp/t.wav`");
    expect((err as RecorderError).details).toMatchObject({ reason: 'stalled', device: 'testmic', signal: 'SIGKILL' });
    expectNothingRegistered(s);
    // The wedged recorder was killed, the microphone and playback are free again.
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
    expect(s.holds).toEqual(['hold@0', 'release@0']);
    expect(s.voice.status()).toMatchObject({ state: 'idle', totals: { ok: 0, failed: 1 }, last: { ok: false, code: 'TA_ERR_RECORDER' } });
    expect(await s.metrics.getSingleMetricAsString('terminal_agent_voiceprint_enrollments_total')).toMatch(/outcome="recorder"} 1/);
  });

  it('prunes old failed audit copies after an enrollment and keeps the new registered one', async () => {
    const s = await setup();
    const dir = join(s.config.state_dir, 'voiceprints');
    mkdirSync(dir, { recursive: true });
    // 25 attempts the service refused, 10 to 34 days ago: past the newest 20, the oldest 5 go.
    const old = Array.from({ length: 25 }, (_, i) => {
      const stem = join(dir, `2020010${i}-refused-${i}`);
      const at = (Date.now() - (10 + i) * 86_400_000) / 1000;
      for (const [ext, body] of [['.wav', Buffer.alloc(2000)], ['.json', '{"ok":false}']] as const) {
        writeFileSync(stem + ext, body);
        utimesSync(stem + ext, at, at);
      }
      return stem;
    });
    const result = await s.voice.enroll({ name: 'kim' });
    await s.voice.stop();
    for (const [i, stem] of old.entries()) expect(existsSync(`${stem}.wav`), stem).toBe(i < 20);
    expect(auditFiles(s)).toHaveLength(2 * 21);
    const [row] = createVoiceprintRegistry(s.db).list();
    expect(existsSync(row!.audit_wav!) && existsSync(row!.audit_json!)).toBe(true);
    expect(row!.audit_wav).toBe(result.audit.file);
  });

  it('refuses a name over 32 bytes (UTF-8) before the microphone opens', async () => {
    const s = await setup();
    const name = 'é'.repeat(17); // 17 characters, 34 bytes
    const err = await s.voice.enroll({ name }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).exitCode).toBe(65);
    expect((err as Error).message).toMatch(/is 34 bytes in UTF-8; the service accepts at most 32 bytes/);
    expect(s.holds).toEqual([]);
    expectNothingRegistered(s);
  });

  it('lets one enrollment own the microphone: a second is refused by name, or waits its turn', async () => {
    // Stand-in for a real-time arecord (the file plugin delivers instantly): it sleeps first,
    // so the first recording is still running when the others ask for the microphone.
    const bin = tmpDir('ta-bin-');
    writeFileSync(join(bin, 'arecord'), `#!/bin/sh\nsleep 0.5\nhead -c 96000 ${JSON.stringify(inputs.speech)}\n`);
    chmodSync(join(bin, 'arecord'), 0o755);
    const refusing = await setup({ env: { PATH: `${bin}:/usr/bin:/bin` }, micWaitMs: 0 });
    const first = refusing.voice.enroll({ name: 'first' });
    const second = await refusing.voice.enroll({ name: 'second' }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(BusyError);
    expect((second as Error).message).toMatch(/microphone is in use \('first' has been recording/);
    await first;
    expect(refusing.emulator.state.voiceprints().map((v) => v.name)).toEqual(['first']);

    const waiting = await setup({ env: { PATH: `${bin}:/usr/bin:/bin` }, micWaitMs: 10_000 });
    const both = await Promise.all([waiting.voice.enroll({ name: 'one' }), waiting.voice.enroll({ name: 'two' })]);
    expect(both.map((r) => r.name)).toEqual(['one', 'two']);
    expect(waiting.emulator.state.voiceprints().map((v) => v.name).sort()).toEqual(['one', 'two']);
  });

  it('deletes on the service and in the registry; a second delete finds it gone on both', async () => {
    const s = await setup();
    const { voiceprint_id: id } = await s.voice.enroll({ name: 'carol' });
    const client = createServiceClient({ config: s.config.service, logger: silentLogger(), userAgent: 'terminal-agent/test' });
    const registry = createVoiceprintRegistry(s.db);
    expect(await deleteVoiceprintEverywhere({ client, registry }, id!)).toMatchObject({ removedLocally: true, alreadyGoneOnService: false });
    expect(s.emulator.state.voiceprints()).toHaveLength(0);
    expect(registry.list()).toHaveLength(0);
    expect(await deleteVoiceprintEverywhere({ client, registry }, id!)).toMatchObject({ removedLocally: false, alreadyGoneOnService: true });
    await client.close();
  });

  it('stop() ends a recording in progress: the recorder is killed and nothing is sent', async () => {
    // Stand-in for a real-time arecord that is still recording when the agent stops.
    const bin = tmpDir('ta-bin-');
    writeFileSync(join(bin, 'arecord'), `#!/bin/sh\nhead -c 16000 ${JSON.stringify(inputs.speech)}\nexec sleep 30\n`);
    chmodSync(join(bin, 'arecord'), 0o755);
    const s = await setup({ env: { PATH: `${bin}:/usr/bin:/bin` } });
    const pending = s.voice.enroll({ name: 'ivan' }).catch((e: unknown) => e);
    for (let i = 0; i < 100 && s.voice.status().state !== 'recording'; i++) await new Promise((r) => setTimeout(r, 20));
    await s.voice.stop();
    const err = await pending;
    expect(err).toBeInstanceOf(AbortedError);
    expect(s.holds).toEqual(['hold@0', 'release@0']);
    expectNothingRegistered(s);
  });

  it('stop() during the upload waits for the service\'s answer: the voiceprint is registered and listed', async () => {
    const s = await setup();
    s.emulator.faults.add({ method: 'POST', path: '/voiceprint', action: 'delay', delayMs: 1500, times: 1 });
    const pending = s.voice.enroll({ name: 'uma', seconds: 2 });
    for (let i = 0; i < 300 && voiceprintPosts(s).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(s.voice.status()).toMatchObject({ state: 'uploading', current: { name: 'uma', phase: 'uploading' } });
    await s.voice.stop();
    const result = await pending;
    const [stored] = s.emulator.state.voiceprints();
    expect(stored).toMatchObject({ voiceprint_id: result.voiceprint_id, name: 'uma' });
    expect(createVoiceprintRegistry(s.db).list()).toEqual([expect.objectContaining({ voiceprint_id: result.voiceprint_id, name: 'uma', source: 'enroll' })]);
    expect(s.voice.status()).toMatchObject({ state: 'stopped', last: { ok: true, voiceprint_id: result.voiceprint_id } });
  });

  it('stop() cuts an upload the service has not answered within the grace, and says what may have happened', async () => {
    const s = await setup({ uploadStopGraceMs: 300 });
    s.emulator.faults.add({ method: 'POST', path: '/voiceprint', action: 'delay', delayMs: 10_000, times: 1 });
    const pending = s.voice.enroll({ name: 'vic', seconds: 2 }).catch((e: unknown) => e);
    for (let i = 0; i < 300 && voiceprintPosts(s).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    await s.voice.stop();
    expect(Date.now() - t0).toBeLessThan(2000);
    const err = await pending;
    expect(err).toBeInstanceOf(AbortedError);
    expect((err as Error).message).toBe(`the agent stopped while the recording of 'vic' was being sent, and the service had not answered within 300 ms: it may or may not have registered it, and 'voiceprint list' does not show it. The recording is kept in ${join(s.config.state_dir, 'voiceprints')}; enroll 'vic' again once the agent runs`);
    expect(createVoiceprintRegistry(s.db).list()).toEqual([]);
    const audit = auditFiles(s).find((f) => f.endsWith('.json'));
    expect(JSON.parse(readFileSync(join(s.config.state_dir, 'voiceprints', audit!), 'utf8'))).toMatchObject({ name: 'vic', ok: false, code: 'TA_ERR_ABORTED' });
  });

  it('refuses new enrollments once stopped', async () => {
    const s = await setup();
    await s.voice.stop();
    await s.voice.stop();
    await expect(s.voice.enroll({ name: 'late' })).rejects.toBeInstanceOf(BusyError);
    expectNothingRegistered(s);
  });
});
