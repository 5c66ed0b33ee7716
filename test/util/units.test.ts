import { describe, expect, it } from 'vitest';
import { formatDuration, formatSize, parseDuration, parseSize } from '../../src/util/units.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500], ['30s', 30_000], ['5m', 300_000], ['1h', 3_600_000], ['1.5s', 1500], ['250', 250], [' 2m ', 120_000],
  ])('%s -> %d ms', (input, ms) => expect(parseDuration(input)).toBe(ms));

  it.each(['', 'fast', '5 minutes', '-1s', '1w', '1.2.3s'])('rejects %j', (input) => {
    expect(parseDuration(input)).toBeUndefined();
  });
});

describe('parseSize', () => {
  it.each([
    ['512KB', 512 * 1024], ['20MB', 20 * 1024 ** 2], ['1GB', 1024 ** 3], ['100', 100], ['64mb', 64 * 1024 ** 2],
  ])('%s -> %d bytes', (input, bytes) => expect(parseSize(input)).toBe(bytes));

  it.each(['', 'big', '10XB', '-5MB'])('rejects %j', (input) => expect(parseSize(input)).toBeUndefined());
});

describe('formatting', () => {
  it('formats durations and sizes for people', () => {
    expect(formatDuration(250)).toBe('250ms');
    expect(formatDuration(1500)).toBe('1.5s');
    expect(formatDuration(125_000)).toBe('2m5s');
    expect(formatSize(2048)).toBe('2.0KB');
    expect(formatSize(5 * 1024 ** 2)).toBe('5.0MB');
  });
});
