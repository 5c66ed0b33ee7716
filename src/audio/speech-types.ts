import type { MinFree } from '../disk/disk-floor.js';
import { InvalidInputError } from '../errors.js';
import type { TtsParams } from './tts-cache.js';
import type { TtsRequest } from '../client/types.js';

// The public shapes of the speech component: what `say` (CLI), `POST /say` (control socket) and
// other components send and get back. JSON-facing fields are snake_case like the rest of the
// product's JSON.

/** The config slices speech reads (structurally a subset of AgentConfig, which can be passed whole). */
export interface SpeechConfig {
  state_dir: string;
  /** The free space kept on state_dir's file system (src/disk/disk-floor.ts); auto when absent. */
  state_min_free?: MinFree;
  tts: { voice: string; volume_ratio: number; speed_ratio: number; pitch_ratio: number; cache_size: number } & TtsLimits;
  audio: { output_device: string };
  service?: { request_timeout: number };
}

/** tts.* keys that bound one answer of the service (schema.ts). */
export interface TtsLimits {
  max_duration_per_char: number;
  max_duration: number;
  max_size: number;
}

/** What one answer may hold: audio (ms) and bytes (the WAV as it arrives, header included). */
export interface TtsBounds {
  maxAudioMs: number;
  maxBytes: number;
}

/** Audio any text gets beyond its per-character allowance (a greeting of two letters). */
const BASE_AUDIO_MS = 10_000;

/** The bounds of the answer to `text`: 10 s plus max_duration_per_char per character, at most max_duration. */
export function ttsBounds(limits: TtsLimits, text: string): TtsBounds {
  const chars = [...text].length;
  return { maxAudioMs: Math.min(limits.max_duration, BASE_AUDIO_MS + chars * limits.max_duration_per_char), maxBytes: limits.max_size };
}

/** `voice` overrides tts.voice; '' = the service's default voice. */
export interface SayRequest extends TtsRequest {
  /** Stop the current utterance and drop the queue (queued ones resolve as interrupted). */
  interrupt?: boolean;
  /** Caller gave up (client disconnected...): removes the utterance, or stops it if playing. */
  signal?: AbortSignal;
}

export type SayOutcome = 'played' | 'interrupted';

export interface SayResult {
  id: number;
  outcome: SayOutcome;
  /** Where the audio came from; absent when interrupted before any audio was found. */
  source?: 'cache' | 'service';
  /** Request accepted to first frame written to the device, ms. */
  first_frame_ms?: number;
  /** Length of the audio played, ms. */
  audio_ms?: number;
  /** PCM bytes written to the device. */
  bytes?: number;
  /** Time spent waiting in the queue, ms. */
  queued_ms: number;
  /** Why it was interrupted (a newer request, a stop, the caller gave up). */
  reason?: string;
}

export interface SpeechStatus {
  state: 'idle' | 'playing' | 'held' | 'stopped';
  device: string;
  playing: { id: number; text: string; source: 'cache' | 'service' | 'pending'; since: string } | null;
  queued: number;
  held: boolean;
  played_total: number;
  failed_total: number;
  last_error: { code: string; message: string; at: string } | null;
  cache: { entries: number; bytes: number; max_bytes: number };
}

export const RATIO_FIELDS = ['volume_ratio', 'speed_ratio', 'pitch_ratio'] as const;

/**
 * Applies tts.* defaults and refuses bad values before anything is sent: the service documents
 * ratios as 0..100 (50 = normal).
 */
export function resolveTtsParams(req: SayRequest, defaults: SpeechConfig['tts']): TtsParams {
  if (typeof req.text !== 'string' || req.text.trim() === '') {
    throw new InvalidInputError('say: the text is empty; give the words to speak');
  }
  const out: TtsParams = {
    text: req.text,
    voice: req.voice ?? defaults.voice,
    volume_ratio: req.volume_ratio ?? defaults.volume_ratio,
    speed_ratio: req.speed_ratio ?? defaults.speed_ratio,
    pitch_ratio: req.pitch_ratio ?? defaults.pitch_ratio,
  };
  if (typeof out.voice !== 'string') throw new InvalidInputError('say: voice must be a string (a voice identifier from `terminal-agent voices`)');
  for (const field of RATIO_FIELDS) {
    const v = out[field];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 100) {
      throw new InvalidInputError(`say: ${field} must be a number from 0 to 100 (50 = normal), got ${JSON.stringify(v)}`, { details: { field, value: v } });
    }
  }
  return out;
}

/** The /tts body: the voice is left out when empty so that the service picks its default. */
export function ttsBody(p: TtsParams): { text: string; voice?: string; volume_ratio: number; speed_ratio: number; pitch_ratio: number } {
  const { voice, ...rest } = p;
  return voice ? { ...rest, voice } : rest;
}
