import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkWavFile } from '../../src/voiceprint/wav-check.js';
import { encodeWav } from '../../src/audio/wav.js';
import { InvalidInputError } from '../../src/errors.js';
import { tmpDir } from '../helpers/tmp.js';

const FMT = { sampleRate: 16000, channels: 1, bitsPerSample: 16 } as const;

async function refusal(path: string, opts = {}): Promise<InvalidInputError> {
  const err = await checkWavFile(path, opts).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(InvalidInputError);
  expect((err as InvalidInputError).exitCode).toBe(65);
  return err as InvalidInputError;
}

describe('checkWavFile', () => {
  it('accepts a PCM WAV and reports its real layout and length', async () => {
    const dir = tmpDir();
    const path = join(dir, 'ok.wav');
    const pcm = Buffer.alloc(3 * 32000, 1);
    writeFileSync(path, encodeWav(FMT, pcm));
    const info = await checkWavFile(path);
    expect(info).toMatchObject({ sampleRate: 16000, channels: 1, bitsPerSample: 16, dataOffset: 44, dataBytes: pcm.length, seconds: 3 });
  });

  it('accepts what sox writes (stereo 44.1 kHz)', async () => {
    const dir = tmpDir();
    const path = join(dir, 'sox.wav');
    execFileSync('sox', ['-n', '-r', '44100', '-c', '2', '-b', '16', path, 'synth', '2', 'sine', '440']);
    const info = await checkWavFile(path);
    expect(info).toMatchObject({ sampleRate: 44100, channels: 2, seconds: 2 });
  });

  it.each([
    ['not a WAV', () => Buffer.from('ID3\x03 this is an mp3, honest'.padEnd(200, '.')), /not a RIFF\/WAVE file/],
    ['empty', () => Buffer.alloc(0), /the file is empty/],
    ['streamed placeholder sizes', () => {
      const b = encodeWav(FMT, Buffer.alloc(32000));
      b.writeUInt32LE(0xffffffff, 4);
      b.writeUInt32LE(0xffffffff, 40);
      return b;
    }, /placeholder sizes/],
    ['truncated', () => encodeWav(FMT, Buffer.alloc(64000)).subarray(0, 30000), /announces 64000 bytes of audio but the file holds 29956; the file is truncated/],
    ['too short', () => encodeWav(FMT, Buffer.alloc(8000)), /0\.25 s of audio, less than the 1 s needed/],
  ])('refuses %s with the reason', async (_label, make, message) => {
    const dir = tmpDir();
    const path = join(dir, 'in.wav');
    writeFileSync(path, make());
    expect((await refusal(path)).message).toMatch(message);
  });

  it('refuses a compressed WAV (mu-law) and says how to convert it', async () => {
    const dir = tmpDir();
    const path = join(dir, 'ulaw.wav');
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-e', 'mu-law', path, 'synth', '2', 'sine', '300']);
    const err = await refusal(path);
    expect(err.message).toMatch(/mu-law/);
    expect(err.message).toMatch(/sox IN\.wav -e signed-integer -b 16 OUT\.wav/);
  });

  it('refuses more audio than the call accepts, and a missing file', async () => {
    const dir = tmpDir();
    const path = join(dir, 'long.wav');
    writeFileSync(path, encodeWav(FMT, Buffer.alloc(5 * 32000)));
    expect((await refusal(path, { maxSeconds: 4, what: 'voiceprint audio' })).message).toMatch(/^voiceprint audio .*long\.wav: it holds 5\.0 s of audio, more than the 4 s accepted; trim it/);
    expect((await refusal(join(dir, 'absent.wav'))).message).toMatch(/cannot be read \(ENOENT\)/);
  });
});
