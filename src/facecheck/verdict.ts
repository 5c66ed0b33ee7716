import type { FaceCheckThresholds, FaceMeasurements, FaceProblem, FaceVerdict } from './types.js';

// From measurements to the one sentence an operator acts on. The order matters: a photo with
// no face or several faces is the wrong photo, whatever its exposure; a face too small cannot be
// judged for sharpness (it is scaled up); a dark face looks blurred, so exposure comes before
// sharpness.

const pct = (share: number) => `${Math.round(share * 100)} %`;

function problemOf(m: FaceMeasurements, t: FaceCheckThresholds): [FaceProblem, string] | undefined {
  if (m.faces.length === 0) {
    // A photo too dark or too bright to find a face in says so: light is the fix, not another
    // photo. Only the mean counts here: a drawing or a document clips by design.
    if (m.brightness < t.min_brightness) {
      return ['too_dark', `no face found and the image is too dark (brightness ${Math.round(m.brightness)} of 255, at least ${t.min_brightness}): add light in front of the person`];
    }
    if (m.brightness > t.max_brightness) {
      return ['over_exposed', `no face found and the image is over-exposed (brightness ${Math.round(m.brightness)} of 255, at most ${t.max_brightness}): use less light or no flash`];
    }
    return ['no_face', 'no face found: drop a photo of one person, facing the camera, head and shoulders'];
  }
  const exposure = exposureProblem(m, t);
  if (m.faces.length > 1) return ['several_faces', `${m.faces.length} faces found: crop the image to one person`];
  const face = m.faces[0]!;
  if (face.width < t.min_face_px) {
    return ['face_too_small', `the face is ${Math.round(face.width)} px wide, at least ${t.min_face_px} px is needed: take the picture closer`];
  }
  if (exposure) return exposure;
  if (m.sharpness !== undefined && m.sharpness < t.min_sharpness) {
    return ['blurred', `the face is blurred (sharpness ${Math.round(m.sharpness)}, at least ${t.min_sharpness}): hold the camera still`];
  }
  return undefined;
}

function exposureProblem(m: FaceMeasurements, t: FaceCheckThresholds): [FaceProblem, string] | undefined {
  if (m.brightness < t.min_brightness || m.clipped_dark > t.max_clipped) {
    return ['too_dark', `the face is too dark (brightness ${Math.round(m.brightness)} of 255, at least ${t.min_brightness}; ${pct(m.clipped_dark)} black, at most ${pct(t.max_clipped)}): add light in front of the person`];
  }
  if (m.brightness > t.max_brightness || m.clipped_bright > t.max_clipped) {
    return ['over_exposed', `the face is over-exposed (brightness ${Math.round(m.brightness)} of 255, at most ${t.max_brightness}; ${pct(m.clipped_bright)} white, at most ${pct(t.max_clipped)}): use less light or no flash`];
  }
  return undefined;
}

export function judge(m: FaceMeasurements, t: FaceCheckThresholds): FaceVerdict {
  const p = problemOf(m, t);
  return p ? { ok: false, problem: p[0], message: p[1], measurements: m } : { ok: true, measurements: m };
}
