import { describe, expect, it } from 'vitest';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon } from './daemon-harness.js';

// The daemon on a machine with no sound card: the ALSA "default" device points at a card that
// does not exist, so `speaker` aborts (SIGABRT) in every player process, the warm one included.
// POST /say must answer with the device error (it used to hang until the caller gave up), and
// the daemon must live on and try again with a fresh player for the next request.

/** Fails instead of hanging: a bound on how long the test may wait, not a speed assertion. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe('terminal-agent run with no sound card', () => {
  it('POST /say answers with the audio device error, every time, and the daemon keeps running', async () => {
    const emulator = await startTestEmulator();
    const dir = tmpDir('ta-daemon-nocard-');
    const alsa = makeTestAlsa(dir, { brokenDefault: true });
    const files = daemonFiles(dir, emulator, { logLevel: 'debug' });
    const d = spawnDaemon(files.configPath, { ALSA_CONFIG_PATH: alsa.env.ALSA_CONFIG_PATH });
    await d.waitLog(isReady);
    // The warm player dies while idle; that is reported, and must not poison the first request.
    await d.waitLog((l) => l.component === 'speech' && l.msg === 'player process ended while idle', 10_000, 'the warm player dying');

    // Long enough that its audio overflows every stream buffer between /tts and the player.
    const text = 'nobody will hear this phrase, because this terminal has no speaker plugged in at all. '.repeat(4);
    for (let i = 1; i <= 2; i++) {
      const res = await within(controlRequest(files.socketPath, 'POST', '/say', { text }), 15_000, `POST /say #${i}`);
      expect(res.status).toBe(500);
      const body = res.json() as Record<string, unknown>;
      expect(body).toMatchObject({ code: 'TA_ERR_AUDIO_DEVICE', device: 'default', signal: 'SIGABRT' });
      expect(body.error).toMatch(/cannot play on ALSA device "default" \(audio.output_device\)/);
      expect(d.child.exitCode).toBeNull();
    }
    // Both phrases were fetched: the failure is the device's, met while the audio streamed in.
    expect(emulator.requests.filter((r) => r.method === 'POST' && r.path === '/tts')).toHaveLength(2);

    const status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as { components: { speech: Record<string, unknown> } };
    expect(status.components.speech).toMatchObject({ state: 'idle', playing: null, failed_total: 2, last_error: { code: 'TA_ERR_AUDIO_DEVICE' } });
    // Each request tried a fresh player: two more aborted children after the warm one.
    const ended = d.logs().filter((l) => l.component === 'speech' && /^player process ended/.test(l.msg) && l.signal === 'SIGABRT');
    expect(ended.length).toBeGreaterThanOrEqual(3);

    d.signal('SIGTERM');
    expect(await d.exited).toEqual({ code: 0, signal: null });
  });
});
