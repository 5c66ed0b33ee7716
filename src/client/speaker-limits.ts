// Limits of the speaker and voiceprint API that the CLI checks while parsing its options; kept apart
// from speaker-voiceprint-api.ts so that `--help` does not load the HTTP client (undici) for them.
export const SPEAKER_MODELS = ['tts-turbo', 'tts-turbo-v2', 'tts-pro'] as const;
export const VOICEPRINT_NAME_MAX_BYTES = 32;
