// What the face check measures and decides. Plain data: it crosses the worker boundary
// (structured clone) and is written into done/ and failed/ result files as is.

/** A found face, in pixels of the image as it is shown (EXIF orientation applied). */
export interface FaceBox {
  x: number;
  y: number;
  width: number;
  height: number;
  /** The detector's confidence, 0 to 1. */
  score: number;
}

export interface FaceMeasurements {
  /** The image's size as shown. */
  width: number;
  height: number;
  faces: FaceBox[];
  /** On the largest face: variance of the Laplacian of its grey crop scaled to SHARPNESS_SIDE px. */
  sharpness?: number;
  /** Mean grey level, 0 to 255: of the largest face, or of the whole image when there is none. */
  brightness: number;
  /** Shares (0 to 1) of the same pixels that are clipped black (<= 5) and white (>= 250). */
  clipped_dark: number;
  clipped_bright: number;
}

export interface FaceCheckThresholds {
  min_face_px: number;
  min_sharpness: number;
  min_brightness: number;
  max_brightness: number;
  max_clipped: number;
}

export type FaceProblem = 'no_face' | 'several_faces' | 'face_too_small' | 'blurred' | 'too_dark' | 'over_exposed';

export interface FaceVerdict {
  ok: boolean;
  /** The first problem found, in the order judge() looks; absent when ok. */
  problem?: FaceProblem;
  /** The operator's sentence: what is wrong and what to do; absent when ok. */
  message?: string;
  measurements: FaceMeasurements;
}

/** Side of the square grey crop the sharpness is measured on, so that it does not depend on the photo's size. */
export const SHARPNESS_SIDE = 112;
