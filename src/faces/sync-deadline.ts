// How long a face sync may take, for the daemon that runs it and the CLI that waits for it.

/**
 * The longest one sync pass may take: ten exchanges' worth of request_timeout, each with its
 * retries (15 s and 4 retries: 12.5 min, under the 30 min watchdog). A pass cut short keeps its
 * finished downloads for the next one (staging.ts), so a first sync of a large group that does not
 * fit still makes progress pass by pass. `faces sync` through the daemon waits this plus
 * FACE_SYNC_ANSWER_MARGIN_MS, never longer.
 */
export function faceSyncDeadlineMs(service: { request_timeout: number; retries: number } = { request_timeout: 15_000, retries: 4 }): number {
  return 10 * service.request_timeout * (service.retries + 1);
}
/** What the CLI adds to faceSyncDeadlineMs for the commit, the index and the socket. */
export const FACE_SYNC_ANSWER_MARGIN_MS = 10_000;
