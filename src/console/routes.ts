import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AgentConfig } from '../config/schema.js';
import type { AgentStatus } from '../control/types.js';
import type { Db } from '../db/database.js';
import type { ServiceClient, VoiceQuery } from '../client/types.js';
import { listEveryVoice } from '../client/voice-catalogue.js';
import type { CachedFace } from '../faces/types.js';
import { BusyError } from '../errors.js';
import { createLayout, type Layout } from '../enroll/layout.js';
import { enrollFilePath, listEnrollment, type ItemState } from '../enroll/listing.js';
import { NoSuchFileError, dropUpload, parseKind, retryFailed } from '../enroll/drop.js';
import { createSpeakerRegistry, speakerStatusText } from '../enroll/speaker-registry.js';
import { createVoiceprintRegistry } from '../voiceprint/registry.js';
import { ConsoleHttpError, badRequest, notFound, readJsonObject, sendJson } from './http.js';
import { statusActions } from './status-actions.js';
import { createFaceList } from './face-list.js';
import type { Thumbnails } from './thumbnails.js';

// The JSON API behind the pages (contract: notes/console-api.md). Reads come from the daemon's own
// state (the face cache, the outbox, the enrollment folders, the local registries), so the console
// works with the network down; changes go through the same paths as the CLI and the control socket.

export interface ConsoleHandlers {
  status(): AgentStatus | Promise<AgentStatus>;
  faces(): unknown[] | Promise<unknown[]>;
  /** Changes (identity) whenever faces() may answer differently (face-list.ts keeps its answer until then). */
  facesVersion?(): object | undefined;
  /** One face of faces(), undefined when the cache does not serve it. */
  face(faceId: string): unknown;
  syncFaces(): Promise<unknown>;
  say(body: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  enrollVoiceprint(body: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
}

export interface RouteDeps {
  config: AgentConfig;
  db: Db;
  client: () => Pick<ServiceClient, 'synthesize' | 'listVoices'>;
  handlers: ConsoleHandlers;
  thumbnails: Thumbnails;
  eventStream?: (req: IncomingMessage, res: ServerResponse) => void;
  consoleStatus: () => Record<string, unknown>;
}

const IMAGE_TYPES: Record<string, string> = { '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.bmp': 'image/bmp', '.webp': 'image/webp', '.gif': 'image/gif' };
const FILE_TYPES: Record<string, string> = { ...IMAGE_TYPES, '.wav': 'audio/wav', '.pcm': 'application/octet-stream', '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8' };
const MAX_TTS_TEXT = 1000;

export function createRoutes(deps: RouteDeps) {
  const layout: Layout = createLayout(deps.config.enroll.dir, deps.config.state_dir);
  const voiceprints = createVoiceprintRegistry(deps.db);
  const speakers = createSpeakerRegistry(deps.db);
  const facesDir = join(deps.config.state_dir, 'faces');
  const faceList = createFaceList({
    faces: () => deps.handlers.faces(),
    version: () => deps.handlers.facesVersion?.(),
    status: () => deps.handlers.status(),
  });

  // A lookup, not a search of faces(): a gallery asks for a thumbnail per face shown, and each
  // search would build the whole list.
  async function findFace(faceId: string): Promise<CachedFace> {
    const face = (await deps.handlers.face(faceId)) as CachedFace | undefined;
    if (!face) throw notFound(`no face ${faceId} in the local cache`, 'the face may have been removed at the last sync');
    return face;
  }

  async function sendFile(req: IncomingMessage, res: ServerResponse, path: string, type: string, cache: string, etag?: string, noLinks = false): Promise<void> {
    let fh: FileHandle;
    let size: number;
    try {
      // In the enrollment folders anyone of the operators' group may put a symlink: never follow
      // one there (it could point at a file only the agent may read).
      fh = await open(path, noLinks ? constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK : constants.O_RDONLY);
    } catch {
      throw notFound('the file is no longer there', 'reload the page');
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new Error('not a file');
      size = st.size;
    } catch {
      await fh.close();
      throw notFound('the file is no longer there', 'reload the page');
    }
    const headers: Record<string, string> = { 'content-type': type, 'cache-control': cache, 'content-length': String(size) };
    if (etag) {
      headers.etag = etag;
      if (req.headers['if-none-match'] === etag) {
        await fh.close();
        delete headers['content-length'];
        res.writeHead(304, headers);
        res.end();
        return;
      }
    }
    res.writeHead(200, headers);
    await pipeline(fh.createReadStream(), res).catch(() => undefined);
  }

  const str = (u: URL, k: string) => {
    const v = u.searchParams.get(k);
    return v === null || v === '' ? undefined : v;
  };
  const ratio = (v: unknown, key: string): number | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0 || n > 100) throw badRequest(`${key} must be a number from 0 to 100`);
    return n;
  };

  return {
    async status() {
      const s = await deps.handlers.status();
      return { ...s, actions: statusActions(s), console: deps.consoleStatus() };
    },

    faces(url: URL) {
      return faceList.answer((url.searchParams.get('q') ?? '').trim().toLowerCase());
    },

    close(): void {
      faceList.close();
    },

    async faceThumb(req: IncomingMessage, res: ServerResponse, faceId: string) {
      const face = await findFace(faceId);
      const src = { faceId: face.face_id, sha256: face.image_sha256, path: join(facesDir, face.image) };
      const t = await deps.thumbnails.get(src);
      const cache = 'private, max-age=31536000, immutable';
      if (t.kind === 'thumb') await sendFile(req, res, t.path, t.type, cache, `"t-${face.image_sha256.slice(0, 16)}"`);
      else await sendFile(req, res, t.path, IMAGE_TYPES[extname(t.path).toLowerCase()] ?? 'application/octet-stream', cache, `"o-${face.image_sha256.slice(0, 16)}"`);
    },

    async faceImage(req: IncomingMessage, res: ServerResponse, faceId: string) {
      const face = await findFace(faceId);
      const path = join(facesDir, face.image);
      await sendFile(req, res, path, IMAGE_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream', 'private, max-age=31536000, immutable', `"i-${face.image_sha256.slice(0, 16)}"`);
    },

    syncFaces: () => deps.handlers.syncFaces(),

    enroll: (url: URL) => listEnrollment(layout, deps.db, { limit: Math.min(1000, Math.max(1, Number(url.searchParams.get('limit') ?? 200) || 200)) }),

    async enrollFile(req: IncomingMessage, res: ServerResponse, url: URL) {
      const kind = parseKind(url.searchParams.get('kind'));
      const state = url.searchParams.get('state') ?? 'queued';
      if (!['queued', 'in_flight', 'done', 'failed'].includes(state)) throw badRequest('state must be queued, in_flight, done or failed');
      const name = url.searchParams.get('name') ?? '';
      let path = enrollFilePath(layout, kind, state as ItemState, name);
      if (!path) throw badRequest(`"${name}" is not a file of ${kind}`);
      const type = FILE_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
      // Only previewable types are shown inline; anything else is a download.
      if (type === 'application/octet-stream') res.setHeader('content-disposition', 'attachment');
      // A page lists a file as waiting or sending, and asks for its preview a moment later, when
      // it may already be in done/ or failed/: it is served from where it went, not refused.
      const moved = state === 'queued' || state === 'in_flight' ? (['done', 'failed'] as const) : [];
      for (const next of moved) {
        try {
          return await sendFile(req, res, path, type, 'private, no-cache', undefined, true);
        } catch (err) {
          if (!(err instanceof ConsoleHttpError) || err.status !== 404) throw err;
          path = enrollFilePath(layout, kind, next, name)!;
        }
      }
      await sendFile(req, res, path, type, 'private, no-cache', undefined, true);
    },

    async upload(req: IncomingMessage, url: URL) {
      const kind = parseKind(url.searchParams.get('kind'));
      const name = url.searchParams.get('name') ?? '';
      try {
        return await dropUpload(layout, kind, name, req, deps.config.enroll.max_file_size);
      } catch (err) {
        if (err instanceof BusyError) throw new ConsoleHttpError(409, 'TA_ERR_EXISTS', err.message, 'wait until the file moved to done/ or failed/, or rename it');
        if ((err as { code?: string }).code === 'TA_ERR_TOO_LARGE') throw new ConsoleHttpError(413, 'TA_ERR_TOO_LARGE', (err as Error).message, 'raise enroll.max_file_size or send a smaller file');
        throw err;
      }
    },

    async retry(req: IncomingMessage) {
      const body = await readJsonObject(req);
      const kind = parseKind(body.kind);
      if (typeof body.name !== 'string' || body.name === '') throw badRequest('send {"kind": ..., "name": ...} with the name as listed under failed');
      try {
        return await retryFailed(layout, deps.db, kind, body.name);
      } catch (err) {
        if (err instanceof NoSuchFileError) throw notFound(err.message, 'reload the list');
        if (err instanceof BusyError) throw new ConsoleHttpError(409, 'TA_ERR_EXISTS', err.message);
        throw err;
      }
    },

    async say(req: IncomingMessage, signal: AbortSignal) {
      const b = await readJsonObject(req);
      if (typeof b.text !== 'string' || b.text.trim() === '') throw badRequest('send {"text": "..."}');
      const body: Record<string, unknown> = { text: b.text };
      if (typeof b.voice === 'string' && b.voice !== '') body.voice = b.voice;
      for (const [k, out] of [['volume', 'volume_ratio'], ['speed', 'speed_ratio'], ['pitch', 'pitch_ratio']] as const) {
        const v = ratio(b[k], k);
        if (v !== undefined) body[out] = v;
      }
      if (b.interrupt === true) body.interrupt = true;
      return deps.handlers.say(body, signal);
    },

    async tts(res: ServerResponse, url: URL, signal: AbortSignal) {
      const text = str(url, 'text');
      if (!text) throw badRequest('give the phrase as ?text=...');
      if (text.length > MAX_TTS_TEXT) throw badRequest(`the phrase is longer than ${MAX_TTS_TEXT} characters`);
      const voice = str(url, 'voice') ?? (deps.config.tts.voice || undefined);
      const request = {
        text,
        ...(voice ? { voice } : {}),
        volume_ratio: ratio(str(url, 'volume'), 'volume') ?? deps.config.tts.volume_ratio,
        speed_ratio: ratio(str(url, 'speed'), 'speed') ?? deps.config.tts.speed_ratio,
        pitch_ratio: ratio(str(url, 'pitch'), 'pitch') ?? deps.config.tts.pitch_ratio,
      };
      const audio = await deps.client().synthesize(request, { signal });
      res.writeHead(200, { 'content-type': 'audio/wav', 'cache-control': 'no-store', ...(audio.contentLength !== undefined ? { 'content-length': String(audio.contentLength) } : {}) });
      await pipeline(audio.body, res).catch(async () => {
        await audio.cancel().catch(() => undefined);
      });
    },

    async voices(url: URL, signal: AbortSignal) {
      const q: VoiceQuery = {};
      for (const k of ['language', 'gender', 'name', 'provider', 'tags'] as const) {
        const v = str(url, k);
        if (v) q[k] = v;
      }
      const all = await listEveryVoice(deps.client(), q, { signal });
      return { voices: all.speakers, total: all.total, matched: all.speakers.length };
    },

    voiceprints: () => ({
      voiceprints: voiceprints.list().map((v) => ({ voiceprint_id: v.voiceprint_id, name: v.name, source: v.source, model: v.model, seconds: v.seconds, quality: v.quality, created_at: v.created_at })),
    }),

    speakers: () => ({
      speakers: speakers.list().map((s) => ({ ...s, status_text: speakerStatusText(s.status), created_at: new Date(s.created_at).toISOString(), updated_at: new Date(s.updated_at).toISOString() })),
    }),

    async enrollVoiceprint(req: IncomingMessage, signal: AbortSignal) {
      const b = await readJsonObject(req);
      if (typeof b.name !== 'string' || b.name.trim() === '') throw badRequest('send {"name": "...", "seconds": N}');
      if (b.seconds !== undefined && (typeof b.seconds !== 'number' || !(b.seconds > 0) || b.seconds > 60)) throw badRequest('"seconds" must be a number from 1 to 60');
      return deps.handlers.enrollVoiceprint({ name: b.name.trim(), ...(b.seconds !== undefined ? { seconds: b.seconds } : {}) }, signal);
    },

    events(req: IncomingMessage, res: ServerResponse) {
      if (!deps.eventStream) throw new ConsoleHttpError(503, 'TA_ERR_UNAVAILABLE', 'this daemon has no event stream', 'reload the page to refresh');
      deps.eventStream(req, res);
    },

    sendJson,
  };
}

export type Routes = ReturnType<typeof createRoutes>;
