import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { assertQuality, measurePcm } from '../../src/voiceprint/quality.js';
import { AudioQualityError } from '../../src/errors.js';
import { makeCaptureInputs, type CaptureInputs } from '../helpers/alsa-capture.js';
import { tmpDirManual } from '../helpers/tmp.js';

let work: { dir: string; remove(): void };
let inputs: CaptureInputs;
const SECONDS = 4;
const take = (path: string, seconds = SECONDS) => readFileSync(path).subarray(0, seconds * 32000);

beforeAll(() => {
  work = tmpDirManual('ta-quality-');
  inputs = makeCaptureInputs(work.dir);
});
afterAll(() => work.remove());

function refusal(pcm: Buffer, requestedSeconds = SECONDS): AudioQualityError {
  try {
    assertQuality(measurePcm(pcm, 16000), { requestedSeconds });
  } catch (err) {
    expect(err).toBeInstanceOf(AudioQualityError);
    return err as AudioQualityError;
  }
  throw new Error('the quality gate accepted it');
}

describe('quality gate', () => {
  it('accepts clear speech and measures it', () => {
    const r = measurePcm(take(inputs.speech), 16000);
    expect(() => assertQuality(r, { requestedSeconds: SECONDS })).not.toThrow();
    expect(r.seconds).toBe(SECONDS);
    expect(r.voicedShare).toBeGreaterThan(0.5);
    expect(r.clippedShare).toBe(0);
  });

  it('refuses silence and says to check the microphone', () => {
    const err = refusal(take(inputs.silence));
    expect(err.message).toMatch(/is silent \(peak -inf dBFS/);
    expect(err.message).toMatch(/plugged in and not muted/);
    expect(err.details.reason).toBe('silence');
    expect(err.exitCode).toBe(65);
  });

  it('refuses a far-away speaker with the measured level and what to do', () => {
    const err = refusal(take(inputs.quiet));
    expect(err.message).toMatch(/too little speech \(peak -45 dBFS, level -6\d dBFS, speech in 0% of frames/);
    expect(err.message).toMatch(/move closer or speak up/);
    expect(err.details.reason).toBe('no-speech');
  });

  it('refuses clipping with the share of samples at full scale', () => {
    const err = refusal(take(inputs.clipped));
    expect(err.message).toMatch(/is clipped: 1\d% of samples at full scale/);
    expect(err.message).toMatch(/lower the capture gain/);
    expect(err.details.reason).toBe('clipping');
  });

  it('refuses a recording much shorter than asked for, and one with no data', () => {
    expect(refusal(take(inputs.speech, 2), 4).message).toMatch(/too short: 2\.0 s of the 4 s asked for/);
    expect(refusal(Buffer.alloc(0)).details.reason).toBe('no-data');
  });

  it('refuses a constant hum (noise, no speech) even when it is loud', () => {
    const hum = Buffer.alloc(SECONDS * 32000);
    for (let i = 0; i < hum.length / 2; i++) hum.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 50 * i) / 16000)), i * 2);
    expect(refusal(hum).details.reason).toBe('no-speech');
  });
});
