import { describe, expect, it, onTestFinished } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_ENTRY, REPO_ROOT, runCliProcess } from '../helpers/cli.js';
import { startTestEmulator, terminalOf, type Emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { makeTestAlsa, type TestAlsa } from '../helpers/alsa.js';
import { parseWavHeader } from '../../src/audio/wav.js';
import { until } from './speech-fixture.js';

// `terminal-agent say` as an operator runs it: --out with no daemon, direct playback when no
// daemon runs, and several clients at once through a running daemon's queue.

interface Setup {
  dir: string;
  alsa: TestAlsa;
  emulator: Emulator;
  configPath: string;
  env: Record<string, string>;
  expectedPcm(text: string): Promise<Buffer>;
}

async function setup(): Promise<Setup> {
  const dir = tmpDir('ta-say-');
  const alsa = makeTestAlsa(dir);
  const emulator = await startTestEmulator({ tts: 'tone' });
  const t = terminalOf(emulator);
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, [
    'service:',
    `  base_url: ${emulator.baseUrl}`,
    `  face_base_url: ${emulator.faceBaseUrl}`,
    `  terminal_secret: ${t.terminal_secret}`,
    `  api_key: ${emulator.apiKey}`,
    `state_dir: ${dir}/state`,
    'audio:',
    `  output_device: ${alsa.device}`,
    'control:',
    `  socket: ${dir}/control.sock`,
    'log:',
    '  level: warn',
    '',
  ].join('\n'));
  return {
    dir, alsa, emulator, configPath,
    env: { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH! },
    async expectedPcm(text) {
      const res = await fetch(`${emulator.baseUrl}/tts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
      const wav = Buffer.from(await res.arrayBuffer());
      emulator.clearRequests();
      const h = parseWavHeader(wav);
      return wav.subarray(h.dataOffset);
    },
  };
}

const ttsCount = (e: Emulator) => e.requests.filter((r) => r.path === '/tts').length;

describe('terminal-agent say', () => {
  it('--out writes the synthesized WAV with no daemon and no speaker', async () => {
    const s = await setup();
    const out = join(s.dir, 'hello.wav');
    const r = await runCliProcess(['say', 'hello from the file', '--out', out, '--config', s.configPath, '--json'], { env: s.env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const wav = readFileSync(out);
    const pcm = await s.expectedPcm('hello from the file');
    expect(wav.subarray(parseWavHeader(wav).dataOffset).equals(pcm)).toBe(true);
    expect(JSON.parse(r.stdout)).toMatchObject({ file: out, bytes: wav.length, sample_rate: 16000, channels: 1, bits_per_sample: 16 });
    expect(s.alsa.played().length).toBe(0);
  });

  it('--out leaves no file behind when the service cuts the WAV (exit 69)', async () => {
    const s = await setup();
    s.emulator.faults.add({ method: 'POST', path: '/tts', action: 'truncate' });
    const out = join(s.dir, 'cut.wav');
    const r = await runCliProcess(['say', 'cut short', '--out', out, '--config', s.configPath], { env: s.env });
    expect(r.code).toBe(69);
    expect(r.stderr).toMatch(/stream was cut/);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(s.dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('--out to a place that cannot take a file fails naming it (exit 1), before any request', async () => {
    const s = await setup();
    // /proc takes no new files, whoever runs the test (root included).
    const r = await runCliProcess(['say', 'nowhere', '--out', '/proc/nowhere.wav', '--config', s.configPath], { env: s.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('terminal-agent: cannot write /proc/nowhere.wav: no such folder, or the folder takes no new files (ENOENT); choose a file in a folder this user can write to [TA_ERR_OUTPUT]\n');
    expect(ttsCount(s.emulator)).toBe(0);
  });

  it('refuses a ratio outside 0..100 (exit 65) and a ratio that is not a number (exit 64) before any request', async () => {
    const s = await setup();
    const bad = await runCliProcess(['say', 'loud', '--volume', '150', '--config', s.configPath], { env: s.env });
    expect(bad.code).toBe(65);
    expect(bad.stderr).toMatch(/volume_ratio must be a number from 0 to 100/);
    const nan = await runCliProcess(['say', 'fast', '--speed', 'quick', '--config', s.configPath], { env: s.env });
    expect(nan.code).toBe(64);
    expect(ttsCount(s.emulator)).toBe(0);
  });

  it('plays directly when no daemon runs, and fails naming the device when it cannot be opened', async () => {
    const s = await setup();
    const pcm = await s.expectedPcm('no daemon here');
    const r = await runCliProcess(['say', 'no daemon here', '--config', s.configPath], { env: s.env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/played .* from the service.*no daemon running: played directly/);
    expect((await s.alsa.waitPlayed(pcm.length)).equals(pcm)).toBe(true);
    writeFileSync(s.configPath, readFileSync(s.configPath, 'utf8').replace(`output_device: ${s.alsa.device}`, 'output_device: unplugged'));
    const fail = await runCliProcess(['say', 'no daemon here', '--config', s.configPath], { env: s.env });
    expect(fail.code).toBe(1);
    expect(fail.stderr).toMatch(/ALSA device "unplugged".*\[TA_ERR_AUDIO_DEVICE\]/s);
  });

  it('Ctrl-C while the daemon holds the phrase ends the call at once and drops the phrase; the next one plays', async () => {
    const s = await setup();
    const pcm = await s.expectedPcm('after the interrupt');
    const daemon = spawn(process.execPath, [CLI_ENTRY, 'run', '--config', s.configPath], {
      cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...s.env }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    onTestFinished(async () => {
      daemon.kill('SIGTERM');
      await exited;
    });
    await until(() => existsSync(join(s.dir, 'control.sock')) || daemon.exitCode !== null, 'the daemon\'s control socket', 20_000);
    // The service holds the answer: without Ctrl-C the CLI would wait for it.
    s.emulator.faults.add({ method: 'POST', path: '/tts', action: 'delay', delayMs: 30_000, times: 1 });
    const say = spawn(process.execPath, [CLI_ENTRY, 'say', 'held by the service', '--config', s.configPath], { env: { PATH: process.env.PATH ?? '', ...s.env } });
    let stdout = '';
    say.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    const done = new Promise<number | null>((resolve) => say.once('close', resolve));
    await until(() => ttsCount(s.emulator) === 1, 'the daemon to ask the service', 20_000);
    const t0 = Date.now();
    say.kill('SIGINT');
    expect(await done).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(stdout).toBe('interrupted: SIGINT\n');
    const next = await runCliProcess(['say', 'after the interrupt', '--config', s.configPath, '--json'], { env: s.env, timeoutMs: 30_000 });
    expect(next.stderr).toBe('');
    expect(JSON.parse(next.stdout)).toMatchObject({ mode: 'daemon', outcome: 'played' });
    expect((await s.alsa.waitPlayed(pcm.length)).equals(pcm)).toBe(true);
  });

  it('several clients at once go through the daemon\'s queue: whole phrases, one after the other', async () => {
    const s = await setup();
    const texts = ['client one speaking', 'client two says something longer', 'client three'];
    const pcms = await Promise.all(texts.map((t) => s.expectedPcm(t)));
    const daemon = spawn(process.execPath, [CLI_ENTRY, 'run', '--config', s.configPath], {
      cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...s.env }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let daemonErr = '';
    daemon.stderr.on('data', (b: Buffer) => (daemonErr += b.toString()));
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    onTestFinished(async () => {
      daemon.kill('SIGTERM');
      await exited;
    });
    await until(() => existsSync(join(s.dir, 'control.sock')) || daemon.exitCode !== null, 'the daemon\'s control socket', 20_000);
    expect(daemon.exitCode, daemonErr).toBeNull();
    const runs = await Promise.all(texts.map((t) => runCliProcess(['say', t, '--config', s.configPath, '--json'], { env: s.env, timeoutMs: 30_000 })));
    for (const r of runs) {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ mode: 'daemon', outcome: 'played', source: 'service' });
    }
    // The daemon took them in its own order; each phrase reached the device whole.
    const ids = runs.map((r) => (JSON.parse(r.stdout) as { id: number }).id);
    const order = [...texts.keys()].sort((a, b) => ids[a]! - ids[b]!);
    const total = pcms.reduce((n, p) => n + p.length, 0);
    expect((await s.alsa.waitPlayed(total)).equals(Buffer.concat(order.map((i) => pcms[i]!)))).toBe(true);
  });
});
