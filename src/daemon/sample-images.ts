import { deflateSync } from 'node:zlib';

// Small but valid PNG images for the demo's sample faces: a coloured disc with two eyes and a
// mouth, so that a viewer shows something recognisable. No image library needed: PNG is a
// signature, three chunks and zlib-deflated scanlines.

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

export type Rgb = readonly [number, number, number];

/** A `size`x`size` RGB PNG of a simple face on a light background. */
export function faceImagePng(color: Rgb, size = 64): Buffer {
  const raw = Buffer.alloc((size * 3 + 1) * size);
  const c = size / 2;
  const r = size * 0.42;
  for (let y = 0; y < size; y++) {
    const row = y * (size * 3 + 1);
    raw[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const d = Math.hypot(x - c, y - c);
      const eye = Math.hypot(x - c + size * 0.15, y - c + size * 0.1) < size * 0.06 || Math.hypot(x - c - size * 0.15, y - c + size * 0.1) < size * 0.06;
      const mouth = Math.abs(Math.hypot(x - c, y - c + size * 0.05) - size * 0.22) < size * 0.03 && y > c + size * 0.05;
      const px: Rgb = d > r ? [240, 240, 235] : eye || mouth ? [30, 30, 30] : color;
      raw.set(px, row + 1 + x * 3);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export const SAMPLE_FACES: ReadonlyArray<{ name: string; color: Rgb }> = [
  { name: 'Ada Lovelace', color: [230, 180, 120] },
  { name: 'Alan Turing', color: [200, 150, 110] },
  { name: 'Grace Hopper', color: [240, 200, 160] },
];
