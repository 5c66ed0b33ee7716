import type { CallOptions, ServiceClient, VoiceItem, VoiceQuery } from './types.js';

/** Voices asked for per request when paging through the whole catalogue. */
export const VOICE_PAGE_SIZE = 100;
/** Voices read at most: a service whose total never ends (or lies) cannot keep the caller paging. */
export const VOICE_CATALOGUE_MAX = 10_000;

export interface VoiceCatalogue {
  speakers: VoiceItem[];
  /** Malformed items the service sent, left out of `speakers`. */
  skipped: number;
  total: number;
}

/**
 * Every voice matching the filters, full records, paged from `skip` to the end: GET /tts answers
 * 10 items unless told otherwise. Paging ends when skip >= total (spec-notes.md) or at an empty
 * page, so a service whose total overstates the list cannot loop forever. Malformed items left
 * out of a page still count for the offset; VOICE_CATALOGUE_MAX ends it too. Used by `voices --all` and the web console.
 */
export async function listEveryVoice(
  client: Pick<ServiceClient, 'listVoices'>,
  filters: Omit<VoiceQuery, 'all' | 'skip' | 'top'>,
  opts?: CallOptions,
  paging: { skip?: number; top?: number } = {},
): Promise<VoiceCatalogue> {
  const top = paging.top ?? VOICE_PAGE_SIZE;
  let page = await client.listVoices({ ...filters, all: true, skip: paging.skip, top }, opts);
  const speakers = [...page.speakers];
  let skipped = page.skipped;
  let total = page.total_speakers_count;
  let got = page.speakers.length + page.skipped;
  let next = (paging.skip ?? 0) + got;
  while (next < total && got > 0 && speakers.length < VOICE_CATALOGUE_MAX) {
    page = await client.listVoices({ ...filters, all: true, skip: next, top }, opts);
    speakers.push(...page.speakers);
    skipped += page.skipped;
    total = page.total_speakers_count;
    got = page.speakers.length + page.skipped;
    next += got;
  }
  return { speakers, skipped, total };
}
