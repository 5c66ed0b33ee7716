import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A microphone with no sound card: ALSA's `file` plugin reads raw PCM from `infile` as if it were
// captured (../../shared/audio-without-hardware.md), so arecord and sox run their real code paths.
// Inputs are made here: speech from espeak-ng, silence, speech far too quiet, and clipped speech.

export const SPEECH_TEXT = 'Hello, this is a voiceprint test. My voice is my passport, please register me now. One two three four five.';

export interface CaptureInputs {
  /** ~7 s of speech, 16 kHz mono s16le. */
  speech: string;
  /** Digital silence, 10 s. */
  silence: string;
  /** The speech 45 dB down: a speaker far from the microphone. */
  quiet: string;
  /** The speech driven 30 dB into full scale. */
  clipped: string;
}

export interface CaptureDevice {
  /** ALSA PCM name to record from. */
  device: string;
  /** Environment for the recorder child: the test ALSA config added to the system's. */
  env: NodeJS.ProcessEnv;
  confPath: string;
}

function sox(args: string[]): void {
  execFileSync('sox', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

const RAW_OUT = (rate: number) => ['-r', String(rate), '-c', '1', '-b', '16', '-e', 'signed-integer', '-t', 'raw'];

/** Makes every input once, in `dir`, at `rate` Hz. */
export function makeCaptureInputs(dir: string, rate = 16000): CaptureInputs {
  const wav = join(dir, 'speech-espeak.wav');
  execFileSync('espeak-ng', ['-w', wav, SPEECH_TEXT], { stdio: ['ignore', 'ignore', 'pipe'] });
  const speech = join(dir, 'speech.raw');
  sox([wav, ...RAW_OUT(rate), speech]);
  const quiet = join(dir, 'quiet.raw');
  sox([wav, ...RAW_OUT(rate), quiet, 'gain', '-45']);
  const clipped = join(dir, 'clipped.raw');
  // sox warns that it clipped: that is the point.
  sox(['-V1', wav, ...RAW_OUT(rate), clipped, 'gain', '30']);
  const silence = join(dir, 'silence.raw');
  writeFileSync(silence, Buffer.alloc(rate * 2 * 10));
  return { speech, silence, quiet, clipped };
}

/**
 * Writes an ALSA config with a capture device `name` that reads `infile`, loaded next to the
 * system's config through ALSA_CONFIG_PATH so that nothing global changes.
 */
export function alsaCaptureDevice(dir: string, infile: string, name = 'testmic', baseEnv: NodeJS.ProcessEnv = process.env): CaptureDevice {
  const confPath = join(dir, `asound-${name}.conf`);
  writeFileSync(confPath, [
    'pcm.!default { type null }',
    `pcm.${name} {`,
    '  type file',
    '  slave.pcm null',
    '  file "/dev/null"',
    `  infile ${JSON.stringify(infile)}`,
    '  format "raw"',
    '}',
    '',
  ].join('\n'));
  return { device: name, confPath, env: { ...baseEnv, ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${confPath}` } };
}

