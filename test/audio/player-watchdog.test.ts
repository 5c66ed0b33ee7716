import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AudioDeviceError, TimeoutError } from '../../src/errors.js';
import { defaultPlayerScript } from '../../src/audio/player.js';
import { tmpDir } from '../helpers/tmp.js';
import { steppableWallClock } from '../helpers/wall-clock.js';
import { speechFixture, until, type SpeechFixtureOptions } from './speech-fixture.js';

// Everything that could hold the speech queue forever: a player process that hangs without dying,
// one that never comes up, and a /tts answer that never comes or stops half-way. Each must fail
// its own phrase with a clear error and let the phrase queued behind it play.

const HUNG_PLAYER = fileURLToPath(new URL('./fixtures/hung-player.mjs', import.meta.url));

/**
 * The first player process is a stand-in that hangs (it fakes a hung ALSA write, which cannot be
 * produced on demand with the null device); every later one is the real player.
 */
function hungPlayer(dir: string, mode: 'no-answer' | 'no-ready', more: Omit<NonNullable<SpeechFixtureOptions['player']>, 'script' | 'env'> = {}) {
  const marker = join(dir, 'hung-player.pid');
  return {
    marker,
    pid: () => Number(readFileSync(marker, 'utf8')),
    player: { ...more, script: HUNG_PLAYER, env: { HUNG_PLAYER_MARKER: marker, HUNG_PLAYER_MODE: mode, HUNG_PLAYER_REAL: defaultPlayerScript() } },
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('player watchdog', () => {
  it('a player that stops answering is killed; its phrase fails naming the device and the queue behind it plays on a fresh player', async () => {
    const dir = tmpDir('ta-hung-');
    const hung = hungPlayer(dir, 'no-answer', { progressMarginMs: 1000 });
    const f = await speechFixture({ player: hung.player });
    await until(() => existsSync(hung.marker), 'the stand-in player to start');
    const next = await f.expectedPcm('next in line');
    const stuck = f.speech.say({ text: 'this one gets stuck' }).catch((e: unknown) => e);
    const queued = f.speech.say({ text: 'next in line' });

    const err = await stuck;
    expect(err).toBeInstanceOf(AudioDeviceError);
    expect((err as Error).message).toMatch(/cannot play on ALSA device "testout" \(audio.output_device\): the player process stopped responding: nothing played for [\d.]+ s with [\d.]+ s of audio waiting; it was killed/);
    expect((err as AudioDeviceError).details).toMatchObject({ device: 'testout', reason: 'hung' });
    expect(await queued).toMatchObject({ outcome: 'played', bytes: next.length });
    expect((await f.alsa.waitPlayed(next.length)).equals(next)).toBe(true);
    await until(() => !alive(hung.pid()), 'the hung player to be gone');
    expect(f.speech.status()).toMatchObject({ state: 'idle', played_total: 1, failed_total: 1, last_error: { code: 'TA_ERR_AUDIO_DEVICE' } });
    expect(f.logs).toContainEqual(expect.objectContaining({ component: 'speech', level: 'warn', msg: 'utterance failed', code: 'TA_ERR_AUDIO_DEVICE' }));
  });

  it('a player that never says ready fails the phrase after the start bound, and the next phrase plays', async () => {
    const dir = tmpDir('ta-hung-');
    const hung = hungPlayer(dir, 'no-ready', { startTimeoutMs: 1000 });
    const f = await speechFixture({ player: hung.player });
    const stuck = f.speech.say({ text: 'never starts' }).catch((e: unknown) => e);
    const queued = f.speech.say({ text: 'plays anyway' });
    const err = await stuck;
    expect(err).toBeInstanceOf(AudioDeviceError);
    expect((err as Error).message).toMatch(/ALSA device "testout" \(audio.output_device\): the player process did not start: no ready report within 1.0 s \(it was killed\)/);
    expect(await queued).toMatchObject({ outcome: 'played' });
    await until(() => !alive(hung.pid()), 'the stuck player to be gone');
  });

  it('stop() does not wait for a hung player: the phrase is cut and the process killed', async () => {
    const dir = tmpDir('ta-hung-');
    // A watchdog margin far beyond the stop bound: stop() alone must end it.
    const hung = hungPlayer(dir, 'no-answer', { progressMarginMs: 10 * 60_000 });
    const f = await speechFixture({ player: hung.player, stopTimeoutMs: 300 });
    const stuck = f.speech.say({ text: 'stuck while the daemon stops' });
    await until(() => f.speech.status().state === 'playing' && existsSync(hung.marker), 'the stuck phrase to start');
    await f.speech.stop();
    expect(await stuck).toMatchObject({ outcome: 'interrupted', reason: 'speech is stopping' });
    // stop() is bounded (300 ms here) and may return before the kernel has reaped the killed
    // child on a loaded machine: gone within a short while is what an operator sees.
    await until(() => !alive(hung.pid()), 'the killed player to be gone', 2000);
  });
});

describe('player stderr', () => {
  it('ALSA\'s complaints reach the log, one warn line per stderr line, as component speech', async () => {
    const f = await speechFixture({ device: 'no_such_speaker', warm: false });
    await expect(f.speech.say({ text: 'anyone there' })).rejects.toBeInstanceOf(AudioDeviceError);
    const lines = f.logs.filter((l) => l.msg === 'player process stderr');
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) {
      expect(l).toMatchObject({ component: 'speech', level: 'warn', player_pid: expect.any(Number) });
      expect(String(l.stderr)).not.toContain('\n');
      expect(String(l.stderr).length).toBeLessThanOrEqual(503);
    }
    expect(lines.map((l) => l.stderr)).toContainEqual(expect.stringMatching(/ALSA lib .*Unknown PCM no_such_speaker/));
  });

  it('a working device logs no stderr line', async () => {
    const f = await speechFixture();
    expect(await f.speech.say({ text: 'all quiet' })).toMatchObject({ outcome: 'played' });
    expect(f.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  });
});

describe('a /tts answer that never ends', () => {
  it('an answer that never comes (delay fault) fails the phrase with a timeout, and the phrase queued behind it plays', async () => {
    const f = await speechFixture({ requestTimeout: 800 });
    f.emulator.faults.add({ method: 'POST', path: '/tts', action: 'delay', delayMs: 30_000 });
    const late = f.speech.say({ text: 'never answered' }).catch((e: unknown) => e);
    const queued = f.speech.say({ text: 'answered' });
    const err = await late;
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/POST \/tts.*service\.request_timeout/);
    expect(await queued).toMatchObject({ outcome: 'played', source: 'service' });
  });

  it('a body that stops arriving (slow-body fault) fails the phrase with the stall timeout, uncached, and the next phrase plays', async () => {
    // The client's own body timeout (the same service.request_timeout in the daemon) is set far
    // off, so that this exercises the stall timeout of the utterance itself.
    const f = await speechFixture({ stallTimeoutMs: 800 });
    // One byte every 5 s: the headers arrive, then the audio stalls.
    f.emulator.faults.setChaos({ slowBodyBytesPerSec: 0.2 });
    const stalled = f.speech.say({ text: 'stalls after the headers' }).catch((e: unknown) => e);
    const queued = f.speech.say({ text: 'arrives whole' });
    await until(() => f.ttsRequests() === 1, 'the first /tts request');
    f.emulator.faults.clear();
    const err = await stalled;
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/^POST \/tts stalled: no audio for 800 ms after \d+ bytes \(service\.request_timeout\)/);
    expect(await queued).toMatchObject({ outcome: 'played', source: 'service' });
    expect(f.speech.status()).toMatchObject({ failed_total: 1, played_total: 1, cache: { entries: 1 } });
  });
});

describe('player watchdog and the wall clock', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  // The step lands while audio is still being handed to the player (the old wall-clock watchdog
  // then killed it at the next hand-over: 4 of 5 runs failed with it; the race is the feed's).
  it('a wall clock set forward by a day mid-phrase (NTP) does not make the playing player look hung', async () => {
    const clock = steppableWallClock();
    const f = await speechFixture();
    const text = 'a phrase long enough to be still playing when the clock moves '.repeat(6);
    const expected = await f.expectedPcm(text);
    const said = f.speech.say({ text });
    await until(() => f.alsa.played().length > 0, 'the first frames');
    clock.step(24 * 60 * 60_000);
    expect(await said).toMatchObject({ outcome: 'played', bytes: expected.length });
  }, 20_000);
});
