import { crc32, deflateSync } from 'node:zlib';
import { wavHeader as pcmWavHeader, type PcmFormat } from '../../src/audio/wav.js';

// Small real media for emulator tests: images of each accepted format and PCM WAVs.

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td) >>> 0);
  return Buffer.concat([len, td, crc]);
}

/** A real w x h RGB PNG filled with one colour. */
export function pngImage(w = 2, h = 2, rgb: [number, number, number] = [200, 30, 30]): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3).map((_, i) => rgb[i % 3]!)]);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(raw)), pngChunk('IEND', Buffer.alloc(0))]);
}

/** A real 1x1 baseline JPEG. */
export function jpegImage(): Buffer {
  return Buffer.from(
    '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
    'base64',
  );
}

/** A real 1x1 lossless WebP. */
export function webpImage(): Buffer {
  return Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');
}

/** A real 2x2 24-bit BMP. */
export function bmpImage(): Buffer {
  const rowBytes = 8; // 2 px * 3 bytes, padded to 4
  const pixels = Buffer.alloc(rowBytes * 2, 0x7f);
  const h = Buffer.alloc(54);
  h.write('BM', 0, 'latin1');
  h.writeUInt32LE(54 + pixels.length, 2);
  h.writeUInt32LE(54, 10);
  h.writeUInt32LE(40, 14);
  h.writeInt32LE(2, 18);
  h.writeInt32LE(2, 22);
  h.writeUInt16LE(1, 26);
  h.writeUInt16LE(24, 28);
  h.writeUInt32LE(pixels.length, 34);
  return Buffer.concat([h, pixels]);
}

/** A canonical PCM header (src/audio/wav.ts), the sizes as given. */
export function wavHeader(dataBytes: number, sampleRate = 16000, channels = 1, bits: PcmFormat['bitsPerSample'] = 16): Buffer {
  return pcmWavHeader({ sampleRate, channels, bitsPerSample: bits }, dataBytes);
}

/** Raw 16-bit mono PCM of a 440 Hz tone. */
export function pcmTone(seconds: number, sampleRate = 16000): Buffer {
  const n = Math.round(seconds * sampleRate);
  const b = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate)), i * 2);
  return b;
}

export function wavTone(seconds = 1.5, sampleRate = 16000): Buffer {
  const pcm = pcmTone(seconds, sampleRate);
  return Buffer.concat([wavHeader(pcm.length, sampleRate), pcm]);
}
