import { describe, expect, it } from 'vitest';
import { bar, levelLines, steadyHint, syncProgressLine } from '../../src/cli/progress-format.js';

describe('live progress text', () => {
  it('draws bars by share, clamped', () => {
    expect(bar(0, 4)).toBe('[░░░░]');
    expect(bar(0.5, 4)).toBe('[██░░]');
    expect(bar(3, 4)).toBe('[████]');
  });

  it('says how far a sync got and at what rate', () => {
    expect(syncProgressLine({ phase: 'listing', faces: null, images_done: 0, images_total: 0, bytes: 0 }, 0)).toBe('face sync: listing the group...');
    expect(syncProgressLine({ phase: 'downloading', faces: 40, images_done: 10, images_total: 40, bytes: 2048 * 1024 }, 2000))
      .toBe(`face sync: 10/40 images [██████${'░'.repeat(18)}] 2.0MB at 1.0MB/s (40 faces listed)`);
    expect(syncProgressLine({ phase: 'committing', faces: 5, images_done: 0, images_total: 0, bytes: 0 }, 10)).toBe('face sync: no images to fetch (5 faces listed); saving');
  });

  it('shows a hint only once it held for most of the last half second', () => {
    expect(steadyHint(['closer', null, 'closer', null, null])).toBe(null);
    expect(steadyHint([null, 'closer', 'closer', null, 'closer'])).toBe('closer');
    expect(steadyHint(['too_loud', 'too_loud', 'too_loud'])).toBe('too_loud');
    expect(levelLines('Ada', { remaining_ms: 2500, rms_dbfs: -30, peak_dbfs: -10, hint: null }, 'louder'))
      .toBe(`recording "Ada": 2.5 s left\nlevel [████████████${'░'.repeat(12)}] -30 dBFS  speak a little louder`);
    expect(levelLines('Ada', { remaining_ms: 0, rms_dbfs: null, peak_dbfs: null, hint: 'closer' }, 'closer')).toContain(`level [${'░'.repeat(24)}] silence  move closer`);
  });
});
