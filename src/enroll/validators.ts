import { open } from 'node:fs/promises';
import { InvalidInputError } from '../errors.js';
import { VOICEPRINT_NAME_MAX_BYTES } from '../client/speaker-limits.js';
import { readHead, sniffImageType, type ImageMime } from '../util/media-sniff.js';

// Checks run on the staged copy before anything is sent: what the service would refuse anyway,
// found locally with a reason an operator can act on (and without spending an upload).

export class EnrollInputError extends InvalidInputError {
  override readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export type ImageType = ImageMime;

/**
 * The image type from the first bytes, whatever the file is called: the client's test (which
 * refuses the upload anyway) plus an IHDR chunk right after a PNG signature.
 */
export function sniffImage(head: Buffer): ImageType | undefined {
  const type = sniffImageType(head);
  if (type === 'image/png' && (head.length < 16 || head.toString('latin1', 12, 16) !== 'IHDR')) return undefined;
  return type;
}

export async function checkImage(path: string, shownAs: string): Promise<ImageType> {
  return checkImageHead(await readHead(path, 32), shownAs);
}

/** checkImage on bytes already in memory (the first 32 are enough). */
export function checkImageHead(head: Buffer, shownAs: string): ImageType {
  const type = sniffImage(head);
  if (!type) {
    throw new EnrollInputError('TA_ERR_BAD_IMAGE', `${shownAs} is not a JPEG, PNG, BMP or WebP image (its first bytes say otherwise); export it again as JPEG or PNG and drop it again`);
  }
  return type;
}

export interface WavInfo {
  format: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  dataOffset: number;
  dataBytes: number;
  durationMs: number;
}

const PLACEHOLDER = 0xffffffff;

/** Walks the RIFF chunks of a WAV file; throws EnrollInputError with what is wrong. */
export async function checkWav(path: string, shownAs: string): Promise<WavInfo> {
  const bad = (why: string) => new EnrollInputError('TA_ERR_BAD_WAV', `${shownAs} is not a usable WAV file: ${why}; record or export it again as 16-bit PCM WAV`);
  const fh = await open(path, 'r');
  try {
    const fileSize = (await fh.stat()).size;
    const head = Buffer.alloc(12);
    if ((await fh.read(head, 0, 12, 0)).bytesRead < 12 || head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WAVE') {
      throw bad('no RIFF/WAVE header');
    }
    const riffSize = head.readUInt32LE(4);
    if (riffSize === PLACEHOLDER || riffSize === 0) throw bad('the header holds a placeholder size (written while streaming)');
    if (riffSize + 8 > fileSize) throw bad(`the header announces ${riffSize + 8} bytes but the file has ${fileSize} (truncated)`);
    let fmt: Omit<WavInfo, 'dataOffset' | 'dataBytes' | 'durationMs'> | undefined;
    let offset = 12;
    const chunk = Buffer.alloc(8);
    while (offset + 8 <= fileSize) {
      await fh.read(chunk, 0, 8, offset);
      const id = chunk.toString('latin1', 0, 4);
      const size = chunk.readUInt32LE(4);
      const body = offset + 8;
      if (id === 'fmt ') {
        if (size < 16) throw bad('the fmt chunk is too short');
        const f = Buffer.alloc(16);
        await fh.read(f, 0, 16, body);
        fmt = { format: f.readUInt16LE(0), channels: f.readUInt16LE(2), sampleRate: f.readUInt32LE(4), bitsPerSample: f.readUInt16LE(14) };
        if (fmt.format !== 1 && fmt.format !== 0xfffe) throw bad(`audio format ${fmt.format} is not PCM`);
        if (fmt.channels < 1 || fmt.channels > 8) throw bad(`${fmt.channels} channels`);
        if (fmt.sampleRate < 8000 || fmt.sampleRate > 192000) throw bad(`sample rate ${fmt.sampleRate} Hz`);
        if (![8, 16, 24, 32].includes(fmt.bitsPerSample)) throw bad(`${fmt.bitsPerSample} bits per sample`);
      } else if (id === 'data') {
        if (!fmt) throw bad('the data chunk comes before the fmt chunk');
        if (size === PLACEHOLDER) throw bad('the data chunk holds a placeholder size (written while streaming)');
        if (size === 0) throw bad('it holds no audio (empty data chunk)');
        if (body + size > fileSize) throw bad(`the data chunk announces ${size} bytes but only ${fileSize - body} follow (truncated)`);
        const frame = fmt.channels * (fmt.bitsPerSample / 8);
        if (size % frame !== 0) throw bad(`the audio is ${size} bytes, not a whole number of ${frame}-byte frames`);
        return { ...fmt, dataOffset: body, dataBytes: size, durationMs: Math.round((size / frame / fmt.sampleRate) * 1000) };
      }
      offset = body + size + (size % 2);
    }
    throw bad(fmt ? 'no data chunk' : 'no fmt chunk');
  } finally {
    await fh.close();
  }
}

/** Raw PCM is 16-bit little-endian at the configured rate: whole frames, and not empty. */
export function checkPcmLength(bytes: number, channels: number, shownAs: string): void {
  const frame = channels * 2;
  if (bytes === 0) throw new EnrollInputError('TA_ERR_BAD_PCM', `${shownAs} holds no audio`);
  if (bytes % frame !== 0) {
    throw new EnrollInputError('TA_ERR_BAD_PCM', `${shownAs} is ${bytes} bytes, not a whole number of ${frame}-byte frames of 16-bit PCM with ${channels} channel(s); it is truncated or not raw 16-bit PCM`);
  }
}

export function checkVoiceprintName(name: string): void {
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > VOICEPRINT_NAME_MAX_BYTES) {
    throw new EnrollInputError('TA_ERR_NAME_TOO_LONG', `voiceprint name "${name}" is ${bytes} bytes in UTF-8; the service allows at most ${VOICEPRINT_NAME_MAX_BYTES}: rename the file`);
  }
}

/** Text the service will store: valid UTF-8 and not blank. */
export function decodeText(buf: Buffer, shownAs: string): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new EnrollInputError('TA_ERR_BAD_TEXT', `${shownAs} is not UTF-8 text; save it as UTF-8`);
  }
  if (text.trim() === '') throw new EnrollInputError('TA_ERR_EMPTY_TEXT', `${shownAs} holds only blank text`);
  return text.replace(/^\uFEFF/, '');
}
