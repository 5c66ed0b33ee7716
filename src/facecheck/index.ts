export { createFaceChecker, DEFAULT_MODEL_DIR, type FaceChecker, type FaceCheckerOptions } from './checker.js';
export { judge } from './verdict.js';
export type { FaceBox, FaceCheckThresholds, FaceMeasurements, FaceProblem, FaceVerdict } from './types.js';
