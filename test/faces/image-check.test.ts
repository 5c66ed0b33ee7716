import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { ImageTap, extensionFor } from '../../src/faces/image-check.js';
import { jpeg, png } from './face-fixtures.js';

function verdictOf(bytes: Buffer, chunk = 1000) {
  const tap = new ImageTap(1 << 20, (n) => new Error(`too large: ${n}`));
  for (let i = 0; i < bytes.length; i += chunk) tap.observe(bytes.subarray(i, i + chunk));
  return tap.verdict();
}

function webp(size: number, declared = size): Buffer {
  const b = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 '), randomBytes(size - 16)]);
  b.writeUInt32LE(declared - 8, 4);
  return b;
}

function bmp(size: number, declared = size): Buffer {
  const b = Buffer.concat([Buffer.from('BM'), Buffer.alloc(4), randomBytes(size - 6)]);
  b.writeUInt32LE(declared, 2);
  return b;
}

describe('image checks on the bytes the server sent', () => {
  it('accepts whole JPEG, PNG, WebP, BMP and GIF images, whatever the chunking', () => {
    expect(verdictOf(jpeg(5000), 7)).toEqual({ type: 'jpeg' });
    expect(verdictOf(Buffer.concat([jpeg(5000), Buffer.alloc(10)]))).toEqual({ type: 'jpeg' }); // padding after EOI
    expect(verdictOf(png(5000), 4096)).toEqual({ type: 'png' });
    expect(verdictOf(webp(3000))).toEqual({ type: 'webp' });
    expect(verdictOf(bmp(3000))).toEqual({ type: 'bmp' });
    expect(verdictOf(Buffer.concat([Buffer.from('GIF89a'), randomBytes(100), Buffer.from([0x3b])]))).toEqual({ type: 'gif' });
    expect(extensionFor('jpeg')).toBe('jpg');
  });

  it('refuses truncated images of every type, and bodies that are not images', () => {
    expect(verdictOf(jpeg(5000).subarray(0, 4000))).toMatchObject({ problem: expect.stringMatching(/JPEG.*truncated/) });
    expect(verdictOf(png(5000).subarray(0, 4000))).toMatchObject({ problem: expect.stringMatching(/PNG.*truncated/) });
    expect(verdictOf(webp(3000).subarray(0, 2000))).toMatchObject({ problem: expect.stringMatching(/WebP.*truncated/) });
    expect(verdictOf(bmp(3000).subarray(0, 2000))).toMatchObject({ problem: expect.stringMatching(/BMP.*truncated/) });
    expect(verdictOf(Buffer.from('{"code":500,"message":"oops"}'))).toMatchObject({ problem: expect.stringMatching(/not a JPEG, PNG, WebP, BMP or GIF/) });
    expect(verdictOf(Buffer.alloc(0))).toEqual({ problem: 'empty body instead of an image' });
  });

  it('stops a body larger than the cap', () => {
    const tap = new ImageTap(100, (n) => new Error(`too large: ${n}`));
    expect(() => tap.observe(Buffer.alloc(101))).toThrow('too large: 101');
  });
});
