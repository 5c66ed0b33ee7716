import { describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TtsTooLongError } from '../../src/errors.js';
import { encodeWav, wavHeader } from '../../src/audio/wav.js';
import { ttsBounds } from '../../src/audio/speech-types.js';
import { runCliProcess } from '../helpers/cli.js';
import { drip, startHostileService, type HostileService } from '../helpers/hostile-service.js';
import { tmpDir } from '../helpers/tmp.js';
import { speechFixture, until } from './speech-fixture.js';

// A TTS answer is bounded (issue 71): a service whose answer never ends, or whose WAV header
// claims 4 GiB, holds neither `say --out`'s disk nor the playback queue. The service here is a
// real HTTP server that misbehaves on purpose; the CLI and the speech component are the real ones.

const FORMAT = { sampleRate: 16000, channels: 1, bitsPerSample: 16 } as const;
const GIB4 = 0xffffff00; // a header's data size: about 4 GiB, not the streaming placeholder

async function textOf(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const c of req) body += (c as Buffer).toString();
  return (JSON.parse(body) as { text?: string }).text ?? '';
}

/** Audio that never ends, 64 KiB every 5 ms (about 200 s of audio per second), after `header`. */
function endless(res: ServerResponse, header: Buffer): void {
  res.writeHead(200, { 'content-type': 'audio/wav' });
  res.write(header);
  const chunk = Buffer.alloc(64 * 1024, 1);
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    res.write(chunk);
  }, 5);
  res.on('close', () => clearInterval(timer));
}

/** /tts: texts with "endless" get endless audio (streaming header, or one claiming 4 GiB with "4gib"); others 0.2 s. */
async function hostileTts(): Promise<HostileService> {
  return startHostileService({
    '/tts': async (req, res) => {
      const text = await textOf(req);
      if (text.includes('endless')) return endless(res, wavHeader(FORMAT, text.includes('4gib') ? GIB4 : 0xffffffff));
      const wav = encodeWav(FORMAT, Buffer.alloc(6400, 2));
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': wav.length }).end(wav);
    },
  });
}

function configFor(dir: string, svc: HostileService, tts = '', requestTimeout = '5s'): string {
  const path = join(dir, 'config.yaml');
  writeFileSync(path, [
    'service:', `  base_url: ${svc.url}`, `  face_base_url: ${svc.faceBaseUrl}`, '  terminal_secret: test-secret', `  request_timeout: ${requestTimeout}`,
    `state_dir: ${dir}/state`, 'tts:', '  cache_size: 0', tts, '',
  ].join('\n'));
  return path;
}

describe('bounded TTS answers', () => {
  it('the bounds grow with the text: 10 s plus tts.max_duration_per_char a character, at most tts.max_duration', () => {
    const limits = { max_duration_per_char: 500, max_duration: 600_000, max_size: 1024 };
    expect(ttsBounds(limits, 'hi')).toEqual({ maxAudioMs: 11_000, maxBytes: 1024 });
    expect(ttsBounds(limits, 'é'.repeat(100))).toEqual({ maxAudioMs: 60_000, maxBytes: 1024 });
    expect(ttsBounds(limits, 'x'.repeat(100_000)).maxAudioMs).toBe(600_000);
  });

  it.each([
    ['a streaming header, audio that never ends', 'say endless things'],
    ['a header claiming 4 GiB', 'say endless 4gib things'],
  ])('say --out against %s: ends with TA_ERR_TTS_TOO_LONG, exit 69, no file and no temp file left', async (_, text) => {
    const svc = await hostileTts();
    const dir = tmpDir('ta-tts-bounds-');
    const out = join(dir, 'out');
    const started = Date.now();
    const r = await runCliProcess(['say', text, '--out', join(out, 'phrase.wav'), '--config', configFor(dir, svc)], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(69);
    expect(r.stderr).toContain('[TA_ERR_TTS_TOO_LONG]');
    expect(r.stderr).toMatch(/more than \d+s of audio for this text \(tts.max_duration_per_char, tts.max_duration\)/);
    expect(r.stderr).toContain('tts.max_duration');
    // 18 characters: 19 s of audio at most, 608 KB; arriving at about 13 MB/s.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  }, 70_000);

  it('say --out: tts.max_size caps the bytes whatever the text allows', async () => {
    const svc = await hostileTts();
    const dir = tmpDir('ta-tts-bounds-');
    const r = await runCliProcess(['say', `endless ${'long text '.repeat(200)}`, '--out', join(dir, 'phrase.wav'), '--json', '--config', configFor(dir, svc, '  max_size: 256KB')], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(69);
    expect(r.stderr).toMatch(/more than 256(\.0)?KB \(tts\.max_size\)/);
    expect(readdirSync(dir).filter((n) => n.endsWith('.wav') || n.endsWith('.tmp'))).toEqual([]);
  }, 70_000);

  it('say --out against an answer that drips too slowly to reach either bound: cut once it arrived longer than its audio may last', async () => {
    // 800 B/s: fast enough for the client's own floor (16 KiB per request_timeout, 30 s here), a
    // fortieth of what 16 kHz audio needs to play: 11 s go by before 1 s of audio arrived.
    const svc = await startHostileService({
      '/tts': (_req, res) => {
        res.writeHead(200, { 'content-type': 'audio/wav' });
        drip(res, () => Buffer.alloc(80, 1), 100);
        res.write(wavHeader(FORMAT, GIB4));
      },
    });
    const dir = tmpDir('ta-tts-bounds-');
    const started = Date.now();
    const r = await runCliProcess(['say', 'drip', '--out', join(dir, 'phrase.wav'), '--config', configFor(dir, svc, '  max_duration: 1s', '30s')], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(69);
    expect(r.stderr).toMatch(/POST \/tts was still sending after 1\ds, longer than the 1(\.0)?s of audio this text may have .*\[TA_ERR_TTS_TOO_LONG\]/);
    expect(Date.now() - started).toBeLessThan(40_000);
    expect(readdirSync(dir).filter((n) => n.endsWith('.wav') || n.endsWith('.tmp'))).toEqual([]);
  }, 70_000);

  it('the playback queue: an endless phrase claiming 4 GiB ends with TtsTooLongError after its bound, and the phrase queued behind it plays', async () => {
    const svc = await hostileTts();
    const f = await speechFixture({ service: svc, tts: { max_duration: 1000, cache_size: 0 } });
    const first = f.speech.say({ text: 'endless 4gib' }).catch((e: unknown) => e);
    const second = f.speech.say({ text: 'short' });
    const err = await first;
    expect(err).toBeInstanceOf(TtsTooLongError);
    expect(err).toMatchObject({ code: 'TA_ERR_TTS_TOO_LONG', message: expect.stringMatching(/more than 1(\.0)?s of audio for this text/) });
    expect(await second).toMatchObject({ outcome: 'played', source: 'service' });
    await until(() => f.speech.status().state === 'idle', 'the queue idle');
    expect(f.speech.status()).toMatchObject({ queued: 0, last_error: { code: 'TA_ERR_TTS_TOO_LONG' } });
  }, 30_000);
});
