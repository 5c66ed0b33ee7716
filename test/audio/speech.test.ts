import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { AudioDeviceError, BadResponseError, BusyError, InvalidInputError, NetworkError, ServerError } from '../../src/errors.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { speechFixture, until } from './speech-fixture.js';

// The playback queue end to end: emulator -> client -> WAV decoder -> player process -> ALSA file
// device, asserting the bytes that reached the device.

function cacheFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'tts'));
  } catch {
    return [];
  }
}

describe('speech queue', () => {
  it('plays utterances in the order asked, one at a time, each resolving with its outcome', async () => {
    const f = await speechFixture();
    const texts = ['first phrase', 'the second, a bit longer phrase', 'third'];
    const expected = await Promise.all(texts.map((t) => f.expectedPcm(t)));
    const results = await Promise.all(texts.map((text) => f.speech.say({ text })));
    expect(results.map((r) => r.outcome)).toEqual(['played', 'played', 'played']);
    expect(results.map((r) => r.source)).toEqual(['service', 'service', 'service']);
    expect(results.map((r) => r.bytes)).toEqual(expected.map((e) => e.length));
    const played = await f.alsa.waitPlayed(expected.reduce((n, e) => n + e.length, 0));
    // Whole utterances back to back, in order: nothing interleaved, nothing dropped.
    expect(played.equals(Buffer.concat(expected))).toBe(true);
    expect(f.speech.status()).toMatchObject({ state: 'idle', queued: 0, played_total: 3, cache: { entries: 3 } });
    const metrics = await f.metrics.metrics();
    expect(metrics).toMatch(/terminal_agent_speech_utterances_total\{result="played"\} 3/);
    expect(metrics).toMatch(/terminal_agent_tts_cache_misses_total 3/);
    expect(metrics).toMatch(/terminal_agent_speech_first_frame_seconds_count\{source="service"\} 3/);    // Programs following GET /events saw each phrase start and finish, in order.
    expect(f.events.map((e) => `${e.type}:${String(e.data.id)}:${String(e.data.outcome ?? e.data.cached)}`)).toEqual([
      'speech.started:1:false', 'speech.finished:1:played', 'speech.started:2:false', 'speech.finished:2:played', 'speech.started:3:false', 'speech.finished:3:played',
    ]);
  });

  it('interrupt stops the phrase being played and drops the queue; the queued ones resolve as interrupted', async () => {
    const f = await speechFixture();
    const long = 'a long announcement that keeps streaming from a slow service for several seconds';
    const fullLong = await f.expectedPcm(long);
    const urgent = await f.expectedPcm('urgent');
    // The first phrase arrives slowly, so it is still playing when the interrupt comes.
    f.emulator.faults.setChaos({ slowBodyBytesPerSec: 8000 });
    const first = f.speech.say({ text: long });
    await until(() => f.alsa.played().length > 0, 'the first frames of the long phrase');
    const queued = [f.speech.say({ text: 'queued one' }), f.speech.say({ text: 'queued two' })];
    expect(f.speech.status()).toMatchObject({ state: 'playing', queued: 2 });
    f.emulator.faults.clear();
    const now = await f.speech.say({ text: 'urgent', interrupt: true });
    expect(now).toMatchObject({ outcome: 'played', source: 'service' });
    const [a, b, c] = await Promise.all([first, ...queued]);
    expect(a).toMatchObject({ outcome: 'interrupted', reason: 'interrupted by a newer request', source: 'service' });
    expect(b).toMatchObject({ outcome: 'interrupted' });
    expect(c).toMatchObject({ outcome: 'interrupted' });
    expect(f.events.filter((e) => e.type === 'speech.finished').map((e) => e.data.outcome)).toEqual(['interrupted', 'played']);
    // The queued phrases were never synthesized.
    expect(f.ttsRequests()).toBe(2);
    const played = await f.alsa.waitPlayed(urgent.length + 1);
    const cut = played.subarray(0, played.length - urgent.length);
    expect(played.subarray(cut.length).equals(urgent)).toBe(true);
    expect(cut.length).toBeLessThan(fullLong.length);
    expect(cut.equals(fullLong.subarray(0, cut.length))).toBe(true);
    // An interrupted stream is incomplete: it must not be cached.
    expect(f.speech.status().cache.entries).toBe(1);
  });

  it('a caller that gives up (signal) stops its own phrase, or removes it from the queue', async () => {
    const f = await speechFixture();
    f.emulator.faults.setChaos({ slowBodyBytesPerSec: 8000 });
    const caller = new AbortController();
    const queuedCaller = new AbortController();
    const playing = f.speech.say({ text: 'a phrase nobody waits for any more', signal: caller.signal });
    const queued = f.speech.say({ text: 'also abandoned', signal: queuedCaller.signal });
    const kept = f.speech.say({ text: 'still wanted' });
    await until(() => f.alsa.played().length > 0, 'the first frames');
    queuedCaller.abort();
    caller.abort();
    expect(await playing).toMatchObject({ outcome: 'interrupted', reason: 'the caller gave up' });
    expect(await queued).toMatchObject({ outcome: 'interrupted', reason: 'the caller gave up' });
    f.emulator.faults.clear();
    expect(await kept).toMatchObject({ outcome: 'played' });
    expect(f.ttsRequests()).toBe(2);
  });

  it('replays a cached phrase with the emulator stopped, and fails a new phrase clearly', async () => {
    const f = await speechFixture();
    const pcm = await f.expectedPcm('welcome back');
    expect(await f.speech.say({ text: 'welcome back' })).toMatchObject({ outcome: 'played', source: 'service' });
    expect(cacheFiles(f.dir).filter((n) => n.endsWith('.wav'))).toHaveLength(1);
    await f.emulator.close();
    expect(await f.speech.say({ text: 'welcome back' })).toMatchObject({ outcome: 'played', source: 'cache', bytes: pcm.length });
    expect((await f.alsa.waitPlayed(2 * pcm.length)).equals(Buffer.concat([pcm, pcm]))).toBe(true);
    const err = await f.speech.say({ text: 'never said before' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(f.speech.status().last_error).toMatchObject({ code: 'TA_ERR_NETWORK' });
    expect(await f.metrics.metrics()).toMatch(/terminal_agent_tts_cache_hits_total 1/);
  });

  it('keeps the cache within tts.cache_size, dropping the least recently used phrase', async () => {
    const one = (await (await speechFixture()).expectedPcm('phrase number one')).length + 44;
    const f = await speechFixture({ cacheSize: Math.floor(one * 2.5) });
    for (const text of ['phrase number one', 'phrase number two', 'phrase number one', 'phrase number six']) await f.speech.say({ text });
    // "two" was used least recently when "six" came in.
    expect(f.ttsRequests()).toBe(3);
    await f.speech.say({ text: 'phrase number two' });
    expect(f.ttsRequests()).toBe(4);
    const stats = f.speech.status().cache;
    expect(stats.bytes).toBeLessThanOrEqual(stats.max_bytes);
    expect(cacheFiles(f.dir).filter((n) => n.endsWith('.wav'))).toHaveLength(stats.entries);
  });

  it('applies tts.* defaults from the config and per-request overrides', async () => {
    const f = await speechFixture();
    f.config.tts.volume_ratio = 30;
    const quiet = await f.expectedPcm('volume check', { volume_ratio: 30 });
    const loud = await f.expectedPcm('volume check', { volume_ratio: 90, pitch_ratio: 10 });
    expect(quiet.equals(loud)).toBe(false);
    await f.speech.say({ text: 'volume check' });
    await f.speech.say({ text: 'volume check', volume_ratio: 90, pitch_ratio: 10 });
    expect((await f.alsa.waitPlayed(quiet.length + loud.length)).equals(Buffer.concat([quiet, loud]))).toBe(true);
  });

  it('refuses ratios outside 0..100 and empty text before any request is sent', async () => {
    const f = await speechFixture();
    for (const bad of [{ volume_ratio: 101 }, { speed_ratio: -1 }, { pitch_ratio: Number.NaN }, { volume_ratio: '50' as unknown as number }]) {
      const err = await f.speech.say({ text: 'hello', ...bad }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toMatch(/must be a number from 0 to 100/);
    }
    await expect(f.speech.say({ text: '  ' })).rejects.toThrow(/text is empty/);
    expect(f.ttsRequests()).toBe(0);
    expect(f.alsa.played().length).toBe(0);
  });

  it('hold() waits for the current phrase and keeps the queue paused until released', async () => {
    const f = await speechFixture();
    let firstDone = false;
    const first = f.speech.say({ text: 'before the recording' }).then((r) => ((firstDone = true), r));
    await until(() => f.speech.status().state === 'playing', 'playback');
    const release = await f.speech.hold();
    expect(firstDone).toBe(true);
    const second = f.speech.say({ text: 'after the recording' });
    await until(() => f.speech.status().queued === 1, 'the second phrase to queue');
    expect(f.speech.status()).toMatchObject({ state: 'held', held: true });
    expect(f.ttsRequests()).toBe(1);
    release();
    release(); // twice is harmless
    expect(await second).toMatchObject({ outcome: 'played' });
    expect((await first).outcome).toBe('played');
  });

  it('stop() lets the current phrase finish, refuses the queued ones and new ones', async () => {
    const f = await speechFixture();
    const current = f.speech.say({ text: 'the last words' });
    const queued = f.speech.say({ text: 'never spoken' }).catch((e: unknown) => e);
    await until(() => f.speech.status().state === 'playing', 'playback');
    await f.speech.stop();
    expect(await current).toMatchObject({ outcome: 'played' });
    expect(await queued).toBeInstanceOf(BusyError);
    await expect(f.speech.say({ text: 'too late' })).rejects.toBeInstanceOf(BusyError);
    expect(f.speech.status().state).toBe('stopped');
  });
});

describe('speech faults', () => {
  it('a device that does not exist fails the phrase naming the device; this process lives on', async () => {
    const f = await speechFixture({ device: 'no_such_speaker' });
    for (let i = 0; i < 2; i++) {
      const err = await f.speech.say({ text: 'anyone there' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AudioDeviceError);
      expect((err as Error).message).toMatch(/ALSA device "no_such_speaker" \(audio.output_device\)/);
    }
    expect(f.speech.status()).toMatchObject({ failed_total: 2, last_error: { code: 'TA_ERR_AUDIO_DEVICE' } });
  });

  it('speaker aborting the player (no sound card) is an AudioDeviceError, and the next phrase tries again', async () => {
    const f = await speechFixture({ alsa: { brokenDefault: true } });
    const err = await f.speech.say({ text: 'no card' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AudioDeviceError);
    expect((err as AudioDeviceError).details).toMatchObject({ device: 'testout', signal: 'SIGABRT' });
    expect((err as Error).message).toMatch(/ALSA cannot open it \(no sound card, or the device is missing\); fix: /);
    // The speaker is plugged back in: same device name, working ALSA configuration.
    makeTestAlsa(f.dir);
    expect(await f.speech.say({ text: 'no card' })).toMatchObject({ outcome: 'played' });
  });

  it('a player that dies before it is ready fails a long phrase too (its audio is not left waiting for a reader)', async () => {
    // Longer than the stream buffers between the service and the player: nothing may wait on
    // backpressure from a player that never came up.
    const f = await speechFixture({ alsa: { brokenDefault: true } });
    const text = 'a phrase long enough that its audio is much larger than every stream buffer on the way to the player, '.repeat(4);
    expect((await f.expectedPcm(text)).length).toBeGreaterThan(256 * 1024);
    for (let i = 0; i < 2; i++) {
      const err = await f.speech.say({ text }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AudioDeviceError);
      expect((err as AudioDeviceError).details).toMatchObject({ device: 'testout', signal: 'SIGABRT' });
    }
    expect(f.speech.status()).toMatchObject({ state: 'idle', playing: null, failed_total: 2, last_error: { code: 'TA_ERR_AUDIO_DEVICE' } });
    expect(f.speech.status().cache.entries).toBe(0);
  });

  it('a truncated WAV fails that phrase only, is not cached, and the same phrase plays next time', async () => {
    const f = await speechFixture();
    f.emulator.faults.add({ method: 'POST', path: '/tts', action: 'truncate' });
    const err = await f.speech.say({ text: 'cut in the middle' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toMatch(/stream was cut/);
    expect(f.speech.status().cache.entries).toBe(0);
    expect(cacheFiles(f.dir)).toEqual([]);
    expect(await f.speech.say({ text: 'cut in the middle' })).toMatchObject({ outcome: 'played', source: 'service' });
    expect(f.speech.status().cache.entries).toBe(1);
  });

  it('JSON instead of audio fails the phrase with the service\'s message', async () => {
    const f = await speechFixture();
    f.emulator.faults.add({ method: 'POST', path: '/tts', action: 'json' });
    const err = await f.speech.say({ text: 'json please' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toMatch(/POST \/tts/);
    expect(f.alsa.played().length).toBe(0);
    expect(f.speech.status().cache.entries).toBe(0);
  });

  it('a 5xx fails one phrase; the next in the queue still plays', async () => {
    const f = await speechFixture();
    f.emulator.faults.add({ method: 'POST', path: '/tts', action: 'status', status: 500 });
    const [a, b] = await Promise.allSettled([f.speech.say({ text: 'unlucky' }), f.speech.say({ text: 'lucky' })]);
    expect(a.status).toBe('rejected');
    expect((a as PromiseRejectedResult).reason).toBeInstanceOf(ServerError);
    expect(b).toMatchObject({ status: 'fulfilled', value: { outcome: 'played' } });
    expect(await f.metrics.metrics()).toMatch(/terminal_agent_speech_utterances_total\{result="failed"\} 1/);
  });
});
