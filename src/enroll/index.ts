export { createEnrollment } from './enrollment.js';
export { createSpeakerRegistry, speakerStatusText, type SpeakerRow } from './speaker-registry.js';
export type { Enrollment, EnrollmentDeps, EnrollmentConfig, EnrollmentStatus, KindStatus, Kind } from './types.js';
