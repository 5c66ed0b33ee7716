// Writes N small PNG face images, each with its own colour (the agent skips a file whose bytes
// it has uploaded before), for the install checks:  node make-faces.mjs N DIR PREFIX
import { deflateSync, crc32 } from 'node:zlib';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [n, dir, prefix] = [Number(process.argv[2]), process.argv[3], process.argv[4] ?? 'face'];
const chunk = (type, data) => {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
};
const png = (i, size = 48) => {
  const raw = Buffer.alloc((size * 3 + 1) * size);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const inside = Math.hypot(x - size / 2, y - size / 2) < size * 0.42;
      raw.set(inside ? [(i * 37) % 256, (i * 91 + 40) % 256, (i * 13 + 90) % 256] : [240, 240, 235], y * (size * 3 + 1) + 1 + x * 3);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
};
mkdirSync(dir, { recursive: true });
for (let i = 1; i <= n; i++) writeFileSync(join(dir, `${prefix}-${String(i).padStart(3, '0')}.png`), png(i));
