import { AudioQualityError } from '../errors.js';

// The gate a recording passes before it is sent: a voiceprint made from silence, a fan or a
// distorted voice is accepted by the service and then fails to match the person. Every refusal says
// what was measured so an operator knows whether to move closer, speak up, or turn the gain down.

export interface QualityReport {
  seconds: number;
  /** Highest absolute sample, dBFS (-Infinity for digital silence). */
  peakDbfs: number;
  /** RMS of the whole recording, dBFS. */
  rmsDbfs: number;
  /** Share (0..1) of 20 ms frames that carry speech. */
  voicedShare: number;
  voicedSeconds: number;
  /** Share (0..1) of samples at full scale. */
  clippedShare: number;
}

export interface QualityLimits {
  /** Shortest usable recording, s. */
  minSeconds: number;
  /** A frame is voiced at or above this level, dBFS... */
  voicedFloorDbfs: number;
  /** ...and this far above the recording's noise floor (10th percentile of frame levels), dB. */
  voicedAboveNoiseDb: number;
  minVoicedShare: number;
  minVoicedSeconds: number;
  /** Peak below this is treated as silence (a muted or unplugged microphone), dBFS. */
  silencePeakDbfs: number;
  maxClippedShare: number;
}

export const DEFAULT_LIMITS: QualityLimits = {
  minSeconds: 1,
  voicedFloorDbfs: -40,
  voicedAboveNoiseDb: 10,
  minVoicedShare: 0.15,
  minVoicedSeconds: 1,
  silencePeakDbfs: -50,
  maxClippedShare: 0.001,
};

const FULL_SCALE = 32768;
const FRAME_SECONDS = 0.02;

function dbfs(amplitude: number): number {
  return amplitude <= 0 ? -Infinity : 20 * Math.log10(amplitude / FULL_SCALE);
}

/** Measures mono signed 16-bit little-endian PCM. */
export function measurePcm(pcm: Buffer, sampleRate: number, limits: QualityLimits = DEFAULT_LIMITS): QualityReport {
  const samples = Math.floor(pcm.length / 2);
  const frameLen = Math.max(1, Math.round(sampleRate * FRAME_SECONDS));
  const frameLevels: number[] = [];
  let peak = 0;
  let sumSq = 0;
  let clipped = 0;
  let frameSq = 0;
  let inFrame = 0;
  for (let i = 0; i < samples; i++) {
    const s = pcm.readInt16LE(i * 2);
    const a = Math.abs(s);
    if (a > peak) peak = a;
    if (s >= 32767 || s <= -32768) clipped++;
    sumSq += s * s;
    frameSq += s * s;
    if (++inFrame === frameLen) {
      frameLevels.push(dbfs(Math.sqrt(frameSq / frameLen)));
      frameSq = 0;
      inFrame = 0;
    }
  }
  const sorted = [...frameLevels].sort((x, y) => x - y);
  const noiseFloor = sorted[Math.floor(sorted.length * 0.1)] ?? -Infinity;
  const threshold = Math.max(limits.voicedFloorDbfs, noiseFloor + limits.voicedAboveNoiseDb);
  const voiced = frameLevels.filter((l) => l >= threshold).length;
  return {
    seconds: samples / sampleRate,
    peakDbfs: dbfs(peak),
    rmsDbfs: samples ? dbfs(Math.sqrt(sumSq / samples)) : -Infinity,
    voicedShare: frameLevels.length ? voiced / frameLevels.length : 0,
    voicedSeconds: voiced * frameLen / sampleRate,
    clippedShare: samples ? clipped / samples : 0,
  };
}

export function formatDbfs(v: number): string {
  return Number.isFinite(v) ? `${Math.round(v)} dBFS` : '-inf dBFS (digital silence)';
}

/** "peak -32 dBFS, level -51 dBFS, speech in 4% of frames" */
export function describeLevels(r: QualityReport): string {
  return `peak ${formatDbfs(r.peakDbfs)}, level ${formatDbfs(r.rmsDbfs)}, speech in ${pct(r.voicedShare)} of frames`;
}

function pct(share: number): string {
  const p = share * 100;
  return `${p > 0 && p < 1 ? p.toFixed(1) : Math.round(p)}%`;
}

/**
 * Throws AudioQualityError for the first problem found, in the order an operator should fix them.
 * `requestedSeconds` (a recording) also refuses one that ended well before it should have.
 */
export function assertQuality(r: QualityReport, opts: { requestedSeconds?: number; what?: string; limits?: QualityLimits } = {}): void {
  const l = opts.limits ?? DEFAULT_LIMITS;
  const what = opts.what ?? 'the recording';
  const details = { quality: toJson(r) };
  if (r.seconds === 0) {
    throw new AudioQualityError(`${what} holds no audio data; record again and check the microphone`, { details: { ...details, reason: 'no-data' } });
  }
  const minSeconds = Math.max(l.minSeconds, (opts.requestedSeconds ?? 0) * 0.9);
  if (r.seconds < minSeconds) {
    const asked = opts.requestedSeconds ? ` of the ${opts.requestedSeconds} s asked for` : '';
    throw new AudioQualityError(`${what} is too short: ${r.seconds.toFixed(1)} s${asked}, at least ${minSeconds.toFixed(1)} s are needed; record again`, { details: { ...details, reason: 'too-short' } });
  }
  if (r.peakDbfs < l.silencePeakDbfs) {
    throw new AudioQualityError(`${what} is silent (${describeLevels(r)}): check that the microphone is plugged in and not muted (alsamixer, capture switch), then speak close to it`, { details: { ...details, reason: 'silence' } });
  }
  if (r.clippedShare > l.maxClippedShare) {
    throw new AudioQualityError(`${what} is clipped: ${pct(r.clippedShare)} of samples at full scale (${describeLevels(r)}): move back from the microphone or lower the capture gain (alsamixer)`, { details: { ...details, reason: 'clipping' } });
  }
  if (r.voicedShare < l.minVoicedShare || r.voicedSeconds < l.minVoicedSeconds) {
    throw new AudioQualityError(`${what} has too little speech (${describeLevels(r)}, ${r.voicedSeconds.toFixed(1)} s; needs ${pct(l.minVoicedShare)} and ${l.minVoicedSeconds} s): move closer or speak up, and talk for the whole recording`, { details: { ...details, reason: 'no-speech' } });
  }
}

/** JSON-safe copy (-Infinity becomes null), rounded for status and audit files. */
export function toJson(r: QualityReport): Record<string, number | null> {
  const round = (v: number, d = 1) => (Number.isFinite(v) ? Number(v.toFixed(d)) : null);
  return {
    seconds: round(r.seconds, 2),
    peak_dbfs: round(r.peakDbfs),
    rms_dbfs: round(r.rmsDbfs),
    voiced_share: round(r.voicedShare, 3),
    voiced_seconds: round(r.voicedSeconds, 2),
    clipped_share: round(r.clippedShare, 4),
  };
}
