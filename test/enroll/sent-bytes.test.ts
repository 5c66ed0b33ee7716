import { describe, expect, it } from 'vitest';
import { createSentBytes, SENT_KEPT_BYTES } from '../../src/enroll/sent-bytes.js';

// The bytes of created faces kept until their id is resolved (face-uploader.ts): a face whose bytes
// were dropped reads its staged copy again, so the budget must hold a whole resolve batch of
// ordinary images, while large images must not hold more than the budget.

const image = (kb: number, fill: number) => Buffer.alloc(kb * 1024, fill);

describe('sent bytes', () => {
  it('holds the largest resolve batch of 30 KB face images: each is taken back, once', () => {
    const sent = createSentBytes();
    const batch = Array.from({ length: 256 }, (_, i) => image(30, i));
    batch.forEach((bytes, i) => sent.keep(i + 1, bytes));
    // The next batch's first faces are sent before this one resolves.
    for (let i = 0; i < 8; i++) sent.keep(1000 + i, image(30, 0));
    batch.forEach((bytes, i) => expect(sent.take(i + 1)).toBe(bytes));
    expect(sent.take(1)).toBeUndefined();
    expect(sent.bytes()).toBe(8 * 30 * 1024);
  });

  it('keeps large images within the budget, dropping the oldest first and never the one just kept', () => {
    const sent = createSentBytes();
    for (let id = 1; id <= 12; id++) sent.keep(id, image(1024, id));
    expect(sent.bytes()).toBeLessThanOrEqual(SENT_KEPT_BYTES);
    expect([...Array(12).keys()].map((i) => sent.take(i + 1) !== undefined)).toEqual([false, false, false, false, true, true, true, true, true, true, true, true]);
    const tiny = createSentBytes(1000);
    const big = image(2, 1);
    tiny.keep(1, big);
    expect(tiny.take(1)).toBe(big);
  });

  it('a face kept again (an update after a create) counts once, with its new bytes, as the newest', () => {
    const sent = createSentBytes(3 * 1024);
    sent.keep(1, image(1, 1));
    sent.keep(2, image(1, 2));
    const again = image(1, 9);
    sent.keep(1, again);
    sent.keep(3, image(1, 3));
    sent.keep(4, image(1, 4));
    expect(sent.bytes()).toBe(3 * 1024);
    expect(sent.take(2)).toBeUndefined();
    expect(sent.take(1)).toBe(again);
  });
});
