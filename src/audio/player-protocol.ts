import type { PcmFormat } from './wav.js';

// Messages between the daemon and the player process (src/audio/player-child.ts). Kept in one
// place so both ends agree; only plain JSON crosses the IPC channel. PCM goes over stdin in
// frames: a 4-byte little-endian length, then that many bytes; a zero length ends the utterance.
// A child plays any number of utterances in turn (no Node start-up between two phrases).

/** A stdin frame carrying `pcm`, or the end-of-utterance frame when `pcm` is absent. */
export function pcmFrame(pcm?: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + (pcm?.length ?? 0));
  out.writeUInt32LE(pcm?.length ?? 0, 0);
  pcm?.copy(out, 4);
  return out;
}

export interface PlayerJob {
  type: 'play';
  format: PcmFormat;
  /** ALSA PCM name (audio.output_device). */
  device: string;
}

export type PlayerMessage =
  | { type: 'ready' }
  | { type: 'first-frame' }
  /** PCM bytes of the current job handed to ALSA so far (the watchdog's sign of life). */
  | { type: 'progress'; bytes: number }
  | { type: 'done'; bytes: number }
  | { type: 'error'; message: string; code: string | undefined };
