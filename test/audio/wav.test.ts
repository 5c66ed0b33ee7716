import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BadResponseError, InvalidInputError } from '../../src/errors.js';
import { encodeWav, parseWavHeader, wavHeader, type PcmFormat } from '../../src/audio/wav.js';
import { WavDecoder } from '../../src/audio/wav-decoder.js';

// The WAV parser on the byte layouts a service or a file may really have, fed in one piece and
// one byte at a time (the way a slow network delivers it).

function pcm(bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) b[i] = (i * 7 + 3) & 0xff;
  return b;
}

function chunk(id: string, body: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.write(id, 0, 'latin1');
  h.writeUInt32LE(body.length, 4);
  return Buffer.concat([h, body, body.length & 1 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

function fmtBody(tag: number, channels: number, rate: number, bits: number, extensible?: { subTag: number; validBits?: number }): Buffer {
  const b = Buffer.alloc(extensible ? 40 : 16);
  b.writeUInt16LE(tag, 0);
  b.writeUInt16LE(channels, 2);
  b.writeUInt32LE(rate, 4);
  b.writeUInt32LE(rate * channels * (bits / 8), 8);
  b.writeUInt16LE(channels * (bits / 8), 12);
  b.writeUInt16LE(bits, 14);
  if (extensible) {
    b.writeUInt16LE(22, 16);
    b.writeUInt16LE(extensible.validBits ?? bits, 18);
    b.writeUInt32LE(3, 20);
    b.writeUInt16LE(extensible.subTag, 24);
    Buffer.from('000000001000800000aa00389b71', 'hex').copy(b, 26);
  }
  return b;
}

function riff(chunks: Buffer[], riffSize?: number, id = 'RIFF'): Buffer {
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), ...chunks]);
  const h = Buffer.alloc(8);
  h.write(id, 0, 'latin1');
  h.writeUInt32LE(riffSize ?? body.length, 4);
  return Buffer.concat([h, body]);
}

function dataChunk(audio: Buffer, declared?: number): Buffer {
  const h = Buffer.alloc(8);
  h.write('data', 0, 'latin1');
  h.writeUInt32LE(declared ?? audio.length, 4);
  return Buffer.concat([h, audio]);
}

async function decode(wav: Buffer, opts: { byteByByte?: boolean; source?: 'service' | 'input'; expectedBytes?: number } = {}) {
  const decoder = new WavDecoder({ source: opts.source ?? 'service', ...(opts.expectedBytes !== undefined ? { expectedBytes: opts.expectedBytes } : {}) });
  const out: Buffer[] = [];
  const pieces = opts.byteByByte ? [...wav].map((b) => Buffer.from([b])) : [wav];
  await pipeline(Readable.from(pieces), decoder, async (source: AsyncIterable<Buffer>) => {
    for await (const c of source) out.push(c);
  });
  return { header: decoder.header!, pcm: Buffer.concat(out), chunks: out };
}

describe('WAV decoder', () => {
  it.each([8, 16, 24, 32] as const)('passes %i-bit PCM through, whole frames only, with any rate and channel count', async (bits) => {
    const format: PcmFormat = { sampleRate: 22050, channels: 3, bitsPerSample: bits };
    const audio = pcm(3 * (bits / 8) * 101);
    for (const byteByByte of [false, true]) {
      const { header, pcm: out, chunks } = await decode(encodeWav(format, audio), { byteByByte });
      expect(header).toMatchObject({ sampleRate: 22050, channels: 3, bitsPerSample: bits, blockAlign: 3 * (bits / 8), dataBytes: audio.length, placeholderSizes: false });
      expect(out.equals(audio)).toBe(true);
      for (const c of chunks) expect(c.length % header.blockAlign).toBe(0);
    }
  });

  it('accepts WAVE_FORMAT_EXTENSIBLE with the PCM sub-format (24 bits in 32-bit containers)', async () => {
    const audio = pcm(8 * 50);
    const wav = riff([chunk('fmt ', fmtBody(0xfffe, 2, 48000, 32, { subTag: 1, validBits: 24 })), dataChunk(audio)]);
    const { header, pcm: out } = await decode(wav);
    expect(header).toMatchObject({ formatTag: 0xfffe, channels: 2, sampleRate: 48000, bitsPerSample: 32 });
    expect(out.equals(audio)).toBe(true);
  });

  it('skips other chunks (odd-sized, padded) before data and ignores chunks after it', async () => {
    const audio = pcm(2 * 300);
    const wav = riff([
      chunk('LIST', Buffer.from('INFOISFT\x05\x00\x00\x00Lavf\x00', 'latin1')),
      chunk('fmt ', fmtBody(1, 1, 16000, 16)),
      chunk('fact', Buffer.from([1, 2, 3])),
      dataChunk(audio),
      chunk('id3 ', pcm(33)),
    ]);
    for (const byteByByte of [false, true]) {
      const { pcm: out } = await decode(wav, { byteByByte });
      expect(out.equals(audio)).toBe(true);
    }
  });

  it.each([
    ['0', 0, 0],
    ['0xFFFFFFFF', 0xffffffff, 0xffffffff],
    ['espeak-ng 0x7FFFF000', 0x7ffff024, 0x7ffff000],
  ])('tolerates streamed placeholder sizes (%s): plays until the stream ends', async (_name, riffSize, dataSize) => {
    const audio = pcm(2 * 1234);
    const wav = riff([chunk('fmt ', fmtBody(1, 1, 16000, 16)), dataChunk(audio, dataSize)], riffSize);
    const { header, pcm: out } = await decode(wav, { byteByByte: true });
    expect(header.placeholderSizes).toBe(true);
    expect(header.dataBytes).toBeUndefined();
    expect(out.equals(audio)).toBe(true);
  });

  it('fails a stream cut short of the announced data size, after passing on what arrived', async () => {
    const audio = pcm(2 * 1000);
    const whole = encodeWav({ sampleRate: 16000, channels: 1, bitsPerSample: 16 }, audio);
    const decoder = new WavDecoder({ source: 'service' });
    const got: Buffer[] = [];
    decoder.on('data', (c: Buffer) => got.push(c));
    const err = await pipeline(Readable.from([whole.subarray(0, 44 + 1000)]), decoder).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toMatch(/cut: 1000 of the 2000 audio bytes/);
    expect(Buffer.concat(got).equals(audio.subarray(0, 1000))).toBe(true);
  });

  it('fails a placeholder-size stream shorter than its Content-Length, or ending inside a frame', async () => {
    const audio = pcm(2 * 2 * 100);
    const wav = riff([chunk('fmt ', fmtBody(1, 2, 8000, 16)), dataChunk(audio, 0)], 0);
    await expect(decode(wav, { expectedBytes: wav.length + 10 })).rejects.toThrow(/Content-Length/);
    await expect(decode(wav.subarray(0, wav.length - 1))).rejects.toThrow(/inside an audio frame/);
  });

  it('names what came instead of a WAV: JSON, HTML, an empty body, a cut header', async () => {
    await expect(decode(Buffer.from('{"code":500,"message":"engine busy"}'))).rejects.toThrow(/not a RIFF\/WAVE file \(it starts with "\{\\"code\\":500/);
    await expect(decode(Buffer.from('<html><body>Bad gateway</body></html>'))).rejects.toThrow(/not a RIFF\/WAVE file/);
    await expect(decode(Buffer.alloc(0))).rejects.toThrow(/the body was empty/);
    await expect(decode(encodeWav({ sampleRate: 8000, channels: 1, bitsPerSample: 8 }, pcm(10)).subarray(0, 30))).rejects.toThrow(/before the WAV header was complete/);
  });

  it.each([
    ['IEEE float', fmtBody(3, 1, 16000, 32), /IEEE float/],
    ['mu-law', fmtBody(7, 1, 8000, 8), /mu-law/],
    ['MP3', fmtBody(0x55, 1, 16000, 16), /MP3/],
    ['EXTENSIBLE float', fmtBody(0xfffe, 1, 16000, 32, { subTag: 3 }), /IEEE float/],
    ['12-bit', (() => { const b = fmtBody(1, 1, 16000, 16); b.writeUInt16LE(12, 14); return b; })(), /12 bits per sample/],
    ['wrong block align', (() => { const b = fmtBody(1, 2, 16000, 16); b.writeUInt16LE(2, 12); return b; })(), /block align is 2/],
  ])('refuses %s with a clear error', async (_name, fmt, message) => {
    const wav = riff([chunk('fmt ', fmt), dataChunk(pcm(64))]);
    const err = await decode(wav).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toMatch(/only integer PCM|only 8, 16, 24 or 32|need/);
  });

  it('refuses data before fmt and big-endian RIFX', async () => {
    await expect(decode(riff([dataChunk(pcm(4)), chunk('fmt ', fmtBody(1, 1, 16000, 16))]))).rejects.toThrow(/data chunk comes before the fmt chunk/);
    await expect(decode(riff([chunk('fmt ', fmtBody(1, 1, 16000, 16)), dataChunk(pcm(4))], undefined, 'RIFX'))).rejects.toThrow(/big-endian RIFX/);
  });

  it('raises InvalidInputError for a local file and BadResponseError for a service answer', async () => {
    const json = Buffer.from('{"error":"nope"}');
    await expect(decode(json, { source: 'input' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(decode(json, { source: 'service' })).rejects.toBeInstanceOf(BadResponseError);
  });
});

describe('WAV header writer', () => {
  it('writes a 44-byte PCM header that the parser reads back', () => {
    const format: PcmFormat = { sampleRate: 44100, channels: 2, bitsPerSample: 24 };
    const h = wavHeader(format, 600);
    expect(h.length).toBe(44);
    expect(h.readUInt32LE(4)).toBe(36 + 600);
    expect(parseWavHeader(Buffer.concat([h, pcm(600)]))).toMatchObject({ ...format, blockAlign: 6, dataBytes: 600, dataOffset: 44, formatTag: 1 });
  });
});
