import { describe, expect, it } from 'vitest';
import { httpDate, isoTime } from '../../src/util/iso-time.js';

describe('isoTime and httpDate', () => {
  const samples = [0, 1, 9, 99, 999, 1_000, 951_782_400_000 /* 2000-02-29 */, 1_795_000_000_123, 253_402_300_799_999, Date.now()];
  for (let i = 0; i < 200; i++) samples.push(Math.floor(Math.random() * 253_402_300_799_999));

  it('write what Date writes, for every time from 1970 to 9999', () => {
    for (const ms of samples) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      expect(httpDate(ms)).toBe(new Date(ms).toUTCString());
    }
    expect(isoTime(1_795_000_000_123.9)).toBe(new Date(1_795_000_000_123.9).toISOString());
  });

  it('fall back to Date outside four-digit years, and refuse an invalid time as Date does', () => {
    for (const ms of [-1, -62_198_755_200_000, 253_402_300_800_000, 8.64e15]) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });
});
