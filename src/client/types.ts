import type { Readable } from 'node:stream';

// The typed surface of the cloud API (../shared/service-api.md): one method per call, 17 in all.
// Every method throws only ServiceError subclasses from src/errors.ts.

export interface FaceRecord {
  face_id: string;
  group_id: string;
  id: number;
  name: string;
}

/** Why a listed record was left out (stable: a metrics label). */
export type SkipReason =
  | 'not_an_object' | 'face_id_not_a_string' | 'face_id_not_32_hex' | 'name_not_a_string' | 'id_not_a_number'
  | 'group_id_not_a_string' | 'invalid_utf8' | 'duplicate_face_id';

export interface SkippedRecord {
  /** Position in the service's list, from 0. */
  index: number;
  reason: SkipReason;
  face_id?: string;
}

/**
 * GET /faces: the usable records, as an array (so callers that only want the faces need not
 * change), with the records that were skipped beside them.
 */
export type FaceListing = FaceRecord[] & { skipped: SkippedRecord[] };

/** A file part streamed from disk, never read into memory. */
export interface FileUpload {
  path: string;
  /** Name sent in the multipart part; defaults to the path's base name. */
  filename?: string;
  /** MIME type matching the bytes (image/jpeg, audio/wav...). */
  contentType: string;
  /**
   * The file's content, already read by the caller (a small image): sent from memory, so the
   * file is neither opened again nor able to change under the upload. `path` only names it.
   */
  bytes?: Buffer;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overall deadline for this call, ms; defaults to service.request_timeout. */
  timeoutMs?: number;
  /** Max retries for this call (0 disables); defaults to the client's policy. */
  retries?: number;
}

export interface ReturnCodeResult {
  return_code: number;
  return_message: string;
}

export interface CodeResult {
  code: number;
  message: string;
  [key: string]: unknown;
}

/** A streamed response body. The caller must consume or `cancel()` it. */
export interface StreamedBody {
  status: number;
  contentType: string;
  contentLength: number | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
  cancel(): Promise<void>;
}

export interface ImageRequestOptions extends CallOptions {
  ifNoneMatch?: string;
  ifModifiedSince?: string;
}

export type FaceImageResult =
  | ({ notModified: false; etag?: string; lastModified?: string } & StreamedBody)
  | { notModified: true };

export interface KnowledgeEntry {
  id?: string;
  title?: string;
  content: string;
}

export interface TtsRequest {
  text: string;
  voice?: string;
  volume_ratio?: number;
  speed_ratio?: number;
  pitch_ratio?: number;
}

export interface VoiceQuery {
  language?: string;
  gender?: string;
  name?: string;
  provider?: string;
  tags?: string;
  all?: boolean;
  skip?: number;
  top?: number;
}

export interface VoiceItem {
  name: string;
  voice: string;
  [key: string]: unknown;
}

export interface VoicePage {
  speakers: VoiceItem[];
  speakers_count: number;
  total_speakers_count: number;
  /** Items of this page left out as malformed (not an object, no string voice or name). */
  skipped: number;
}

export type SpeakerModel = 'tts-turbo' | 'tts-turbo-v2' | 'tts-pro';

export interface TrainSpeakerRequest {
  audio: FileUpload;
  model: string;
  audioText: string;
}

export interface SpeakerStatus {
  model: string;
  speaker_id: string;
  status: number;
}

export interface RegisterVoiceprintRequest {
  name: string;
  audio: FileUpload;
  sampleRate?: number;
  channel?: number;
  model?: string;
  format?: 'pcm' | 'wav';
}

export interface RegisterVoiceprintResult {
  /** Found inside voiceprint_info, else at the top level (spec-notes.md). */
  voiceprint_id: string | undefined;
  voiceprint_info: Record<string, unknown>;
  code: number;
  message: string;
}

/** What the client reports about each HTTP exchange (for metrics and debug logs). */
export interface RequestEvent {
  operation: string;
  method: string;
  status: number | undefined;
  durationMs: number;
  attempt: number;
  outcome: 'ok' | 'error' | 'retry';
  errorCode?: string;
}

export interface ServiceClient {
  // Faces ({face_base_url}, Bearer terminal_secret)
  listFaces(opts?: CallOptions): Promise<FaceListing>;
  createFace(input: { name: string; image: FileUpload }, opts?: CallOptions): Promise<ReturnCodeResult>;
  getFace(faceId: string, opts?: CallOptions): Promise<FaceRecord>;
  updateFace(faceId: string, input: { name: string; image?: FileUpload }, opts?: CallOptions): Promise<ReturnCodeResult>;
  deleteFace(faceId: string, opts?: CallOptions): Promise<void>;
  getFaceImage(faceId: string, opts?: ImageRequestOptions): Promise<FaceImageResult>;
  // Knowledge ({base_url}, Bearer api_key)
  addKnowledge(entry: KnowledgeEntry, opts?: CallOptions): Promise<unknown>;
  deleteKnowledge(id: string, opts?: CallOptions): Promise<unknown>;
  // Notifications
  notifyAgent(agentId: string, opts?: CallOptions): Promise<CodeResult>;
  notifyKnowledge(body?: Record<string, unknown>, opts?: CallOptions): Promise<CodeResult>;
  // Speech synthesis
  synthesize(request: TtsRequest, opts?: CallOptions): Promise<StreamedBody>;
  listVoices(query?: VoiceQuery, opts?: CallOptions): Promise<VoicePage>;
  // Speaker training
  trainSpeaker(request: TrainSpeakerRequest, opts?: CallOptions): Promise<CodeResult & { speaker_id: string }>;
  speakerStatus(model: string, speakerId: string, opts?: CallOptions): Promise<SpeakerStatus>;
  deleteSpeaker(model: string, speakerId: string, opts?: CallOptions): Promise<CodeResult>;
  // Voiceprints
  registerVoiceprint(request: RegisterVoiceprintRequest, opts?: CallOptions): Promise<RegisterVoiceprintResult>;
  deleteVoiceprint(voiceprintId: string, opts?: CallOptions): Promise<CodeResult>;

  /** Closes pooled connections. Safe to call twice. */
  close(): Promise<void>;
}
