export { createEnrollment } from './enrollment.js';
export { createSpeakerRegistry, speakerStatusText, type SpeakerRow } from './speaker-registry.js';
export type { Enrollment, EnrollmentDeps, EnrollmentConfig, EnrollmentStatus, KindStatus, Kind } from './types.js';
export { createLayout, type Layout } from './layout.js';
export { listResults, resultFileFor, resultPathFor, NAME_MAX_BYTES, type ResultEntry, type ResultState } from './result-files.js';
