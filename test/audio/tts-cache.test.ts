import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import { openDatabase } from '../../src/db/database.js';
import { silentLogger } from '../../src/log/logger.js';
import { createTtsCache, ttsCacheKey } from '../../src/audio/tts-cache.js';
import { encodeWav, parseWavHeader } from '../../src/audio/wav.js';

// The cache's own guarantees, on a real SQLite file and folder: what a crash or an operator can
// leave behind is cleaned up or ignored, and a streamed header is stored with its real sizes.

function setup(maxBytes = 1 << 20) {
  const dir = tmpDir('ta-ttscache-');
  const db = openDatabase({ path: join(dir, 'agent.db') });
  const cache = createTtsCache({ db, dir: join(dir, 'tts'), maxBytes, logger: silentLogger() });
  return { dir, db, cache, ttsDir: join(dir, 'tts') };
}

const params = { text: 'hi', voice: '', volume_ratio: 50, speed_ratio: 50, pitch_ratio: 50 };
const FORMAT = { sampleRate: 16000, channels: 1, bitsPerSample: 16 } as const;

async function store(cache: ReturnType<typeof setup>['cache'], key: string, wav: Buffer) {
  const w = cache.writer(key)!;
  w.write(wav.subarray(0, 10));
  w.write(wav.subarray(10));
  const header = parseWavHeader(wav, 'service');
  await cache.commit(key, w, header, wav.length - header.dataOffset);
}

describe('TTS cache', () => {
  it('keys on text, voice and every ratio', () => {
    const k = ttsCacheKey(params);
    expect(k).toMatch(/^[0-9a-f]{64}$/);
    for (const change of [{ text: 'hi!' }, { voice: 'v2' }, { volume_ratio: 51 }, { speed_ratio: 49 }, { pitch_ratio: 0 }]) {
      expect(ttsCacheKey({ ...params, ...change })).not.toBe(k);
    }
  });

  it('stores a streamed WAV with its real sizes in place of the placeholders', async () => {
    const { cache, ttsDir } = setup();
    await cache.init();
    const wav = encodeWav(FORMAT, Buffer.alloc(3200, 7));
    wav.writeUInt32LE(0xffffffff, 4);
    wav.writeUInt32LE(0xffffffff, 40);
    const key = ttsCacheKey(params);
    await store(cache, key, wav);
    const stored = readFileSync(join(ttsDir, `${key}.wav`));
    expect(stored.readUInt32LE(4)).toBe(36 + 3200);
    expect(parseWavHeader(stored)).toMatchObject({ dataBytes: 3200, placeholderSizes: false });
    expect(cache.get(key)).toMatchObject({ bytes: stored.length });
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: stored.length });
  });

  it('at start-up removes temp files of a crash and files the index does not know', async () => {
    const { cache, ttsDir } = setup();
    await cache.init();
    const key = ttsCacheKey(params);
    await store(cache, key, encodeWav(FORMAT, Buffer.alloc(100)));
    writeFileSync(join(ttsDir, `.${'a'.repeat(64)}.wav.1234.tmp`), 'half a phrase');
    writeFileSync(join(ttsDir, `${'b'.repeat(64)}.wav`), 'never indexed');
    await cache.init();
    expect(readdirSync(ttsDir)).toEqual([`${key}.wav`]);
  });

  it('forgets an entry whose file was removed or damaged, so that it is synthesized again', async () => {
    const { cache, ttsDir } = setup();
    await cache.init();
    const a = ttsCacheKey(params);
    const b = ttsCacheKey({ ...params, text: 'other' });
    await store(cache, a, encodeWav(FORMAT, Buffer.alloc(1000)));
    await store(cache, b, encodeWav(FORMAT, Buffer.alloc(1000)));
    rmSync(join(ttsDir, `${a}.wav`));
    truncateSync(join(ttsDir, `${b}.wav`), 500);
    expect(cache.get(a)).toBeUndefined();
    expect(cache.get(b)).toBeUndefined();
    expect(cache.stats().entries).toBe(0);
    expect(existsSync(join(ttsDir, `${b}.wav`))).toBe(false);
  });

  it('never stores a phrase larger than the whole cache, and stores nothing at cache_size 0', async () => {
    const small = setup(500);
    await small.cache.init();
    const w = small.cache.writer('k')!;
    w.write(Buffer.alloc(600));
    expect(w.ok).toBe(false);
    const off = setup(0);
    expect(off.cache.writer('k')).toBeUndefined();
    expect(off.cache.get('k')).toBeUndefined();
  });
});
