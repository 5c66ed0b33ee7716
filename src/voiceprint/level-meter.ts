// The live level of a recording, window by window, with a hint for the person speaking: the
// quality gate (quality.ts) only speaks after the recording, when it is too late to move closer.

export type LevelHint = 'closer' | 'louder' | 'too_loud' | null;

export interface LevelReading {
  elapsed_ms: number;
  remaining_ms: number;
  /** RMS of the window, dBFS (-Infinity for digital silence, sent as null in JSON). */
  rms_dbfs: number;
  peak_dbfs: number;
  hint: LevelHint;
}

/** Peak at or above this is at the edge of clipping, dBFS. */
export const TOO_LOUD_PEAK_DBFS = -1;
/** A window quieter than this hardly reaches the microphone: the speaker is too far, dBFS. */
export const CLOSER_BELOW_RMS_DBFS = -45;
/** Quieter than this is usable only in part (quality.ts counts voiced frames from -40 dBFS). */
export const LOUDER_BELOW_RMS_DBFS = -32;

export function hintFor(rmsDbfs: number, peakDbfs: number): LevelHint {
  if (peakDbfs >= TOO_LOUD_PEAK_DBFS) return 'too_loud';
  if (!(rmsDbfs >= CLOSER_BELOW_RMS_DBFS)) return 'closer';
  if (rmsDbfs < LOUDER_BELOW_RMS_DBFS) return 'louder';
  return null;
}

const round1 = (x: number) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : x);

/** Feeds mono S16LE PCM; calls `onLevel` once per `windowMs` of audio. */
export function createLevelMeter(o: { sampleRate: number; seconds: number; windowMs?: number; onLevel(r: LevelReading): void }) {
  const windowSamples = Math.max(1, Math.round((o.sampleRate * (o.windowMs ?? 100)) / 1000));
  const totalMs = o.seconds * 1000;
  let samples = 0;
  let inWindow = 0;
  let sumSq = 0;
  let peak = 0;
  let carry: Buffer | undefined;
  return {
    push(chunk: Buffer): void {
      let buf = carry ? Buffer.concat([carry, chunk]) : chunk;
      carry = undefined;
      if (buf.length % 2 === 1) {
        carry = buf.subarray(buf.length - 1);
        buf = buf.subarray(0, buf.length - 1);
      }
      for (let i = 0; i + 1 < buf.length; i += 2) {
        const s = buf.readInt16LE(i);
        const a = Math.abs(s);
        if (a > peak) peak = a;
        sumSq += s * s;
        samples++;
        if (++inWindow < windowSamples) continue;
        const rms = 20 * Math.log10(Math.sqrt(sumSq / inWindow) / 32768);
        const pk = 20 * Math.log10(peak / 32768);
        const elapsed = Math.round((samples / o.sampleRate) * 1000);
        o.onLevel({ elapsed_ms: elapsed, remaining_ms: Math.max(0, Math.round(totalMs - elapsed)), rms_dbfs: round1(rms), peak_dbfs: round1(pk), hint: hintFor(rms, pk) });
        inWindow = 0;
        sumSq = 0;
        peak = 0;
      }
    },
  };
}
