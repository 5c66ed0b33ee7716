import { InvalidInputError, describeError } from '../errors.js';
import { judge, type FaceChecker, type FaceCheckThresholds, type FaceMeasurements, type FaceProblem } from '../facecheck/index.js';
import type { EnrollSettings } from './types.js';

// The face check as one step of taking a face image: given the bytes already read, it says
// whether the image goes on to the upload, and what to record beside it (done/ or failed/). Kept
// apart from claim.ts, which only calls it, so that how files are opened and moved can change
// without touching it. Also used by `faces add` / `faces update IMAGE`.

/** What a face image's result file holds under `face_check`. */
export interface FaceCheckRecord extends Partial<FaceMeasurements> {
  verdict: 'accepted' | 'warned' | 'refused';
  problem?: FaceProblem | 'undecodable' | 'unavailable';
  message?: string;
}

export interface FaceCheckOutcome {
  record: FaceCheckRecord;
  /** Set when the image must not be uploaded: the error's code and the operator's sentence. */
  refusal?: { code: 'TA_ERR_FACE_CHECK' | 'TA_ERR_FACE_CHECK_UNAVAILABLE' | 'TA_ERR_BAD_IMAGE'; message: string };
}

export type FaceCheckStep = (bytes: Uint8Array, shownAs: string) => Promise<FaceCheckOutcome>;

export function thresholdsOf(s: EnrollSettings['face_check']): FaceCheckThresholds {
  return { min_face_px: s.min_face_px, min_sharpness: s.min_sharpness, min_brightness: s.min_brightness, max_brightness: s.max_brightness, max_clipped: s.max_clipped };
}

/** Undefined when enroll.face_check.mode is off: nothing is checked and nothing recorded. */
export function createFaceCheckStep(checker: FaceChecker, settings: EnrollSettings['face_check']): FaceCheckStep | undefined {
  if (settings.mode === 'off') return undefined;
  const warn = settings.mode === 'warn';
  const thresholds = thresholdsOf(settings);
  return async (bytes, shownAs) => {
    let measurements: FaceMeasurements;
    try {
      measurements = await checker.check(bytes);
    } catch (err) {
      const undecodable = err instanceof InvalidInputError;
      const message = undecodable
        ? `${shownAs} could not be decoded as an image (${describeError(err)}): export it again as JPEG or PNG and drop it again`
        : `the face check could not run on ${shownAs} (${describeError(err)}): run 'terminal-agent doctor', or set enroll.face_check.mode: off to upload without the check`;
      const record: FaceCheckRecord = { verdict: warn ? 'warned' : 'refused', problem: undecodable ? 'undecodable' : 'unavailable', message };
      return warn ? { record } : { record, refusal: { code: undecodable ? 'TA_ERR_BAD_IMAGE' : 'TA_ERR_FACE_CHECK_UNAVAILABLE', message } };
    }
    const v = judge(measurements, thresholds);
    if (v.ok) return { record: { verdict: 'accepted', ...measurements } };
    const message = `${shownAs}: ${v.message!}`;
    const record: FaceCheckRecord = { verdict: warn ? 'warned' : 'refused', problem: v.problem!, message: v.message!, ...measurements };
    return warn ? { record } : { record, refusal: { code: 'TA_ERR_FACE_CHECK', message } };
  };
}
