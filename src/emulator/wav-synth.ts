import { spawn } from 'node:child_process';
import { encodeWav } from '../audio/wav.js';

// Audio for POST /tts: espeak-ng speaking the text when it is installed, else a tone whose length
// follows the text. Either way a well-formed PCM WAV with real sizes in its header.

export interface SynthParams {
  text: string;
  /** espeak-ng voice (language) name. */
  espeakVoice: string;
  volume: number;
  speed: number;
  pitch: number;
}

/** A tone: 60 ms per character (at least 300 ms), pitch and speed following the ratios. */
export function toneWav(p: SynthParams, sampleRate = 16000): Buffer {
  const chars = [...p.text].length;
  const seconds = Math.max(0.3, chars * 0.06) * (1.5 - p.speed / 100);
  const samples = Math.round(seconds * sampleRate);
  const freq = 220 + p.pitch * 4.4;
  const amp = Math.round(32767 * 0.8 * (p.volume / 100));
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    // A short fade at both ends so the tone does not click.
    const fade = Math.min(1, i / 160, (samples - i) / 160);
    data.writeInt16LE(Math.round(amp * fade * Math.sin((2 * Math.PI * freq * i) / sampleRate)), i * 2);
  }
  return encodeWav({ sampleRate, channels: 1, bitsPerSample: 16 }, data);
}

/**
 * espeak-ng writes a streaming header (sizes 0x7FFFxxxx) to stdout; the output is collected and
 * given its real sizes. Resolves undefined when espeak-ng is missing or fails.
 */
export function espeakWav(p: SynthParams, timeoutMs = 20_000): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const args = [
      '--stdout', '-v', p.espeakVoice,
      '-s', String(Math.round(80 + p.speed * 1.9)), // words per minute: 0 -> 80, 50 -> 175 (espeak's normal), 100 -> 270
      '-p', String(Math.min(99, Math.round(p.pitch))),
      '-a', String(Math.round(p.volume * 2)),
      '--', p.text,
    ];
    let child;
    try {
      child = spawn('espeak-ng', args, { stdio: ['ignore', 'pipe', 'ignore'], timeout: timeoutMs });
    } catch {
      resolve(undefined);
      return;
    }
    const parts: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => parts.push(c));
    child.on('error', () => resolve(undefined));
    child.on('close', (code) => {
      const out = Buffer.concat(parts);
      if (code !== 0 || out.length < 44 || out.toString('latin1', 0, 4) !== 'RIFF') return resolve(undefined);
      resolve(fixHeader(out));
    });
  });
}

/** Rewrites RIFF and data sizes of a canonical 44-byte-header WAV to what is really there. */
export function fixHeader(wav: Buffer): Buffer {
  const out = Buffer.from(wav);
  let off = 12;
  while (off + 8 <= out.length) {
    const id = out.toString('latin1', off, off + 4);
    if (id === 'data') {
      out.writeUInt32LE(out.length - off - 8, off + 4);
      break;
    }
    off += 8 + out.readUInt32LE(off + 4);
  }
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

/** Yields the WAV in chunks, giving the event loop a turn between them (a streamed answer). */
export async function* chunked(buf: Buffer, size = 8192): AsyncGenerator<Buffer> {
  for (let i = 0; i < buf.length; i += size) {
    yield buf.subarray(i, i + size);
    await new Promise<void>((r) => setImmediate(r));
  }
}
