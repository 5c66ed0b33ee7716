import { InvalidInputError } from '../errors.js';
import { canonicalName, escapeName, nameProblem } from './names.js';
import type { HttpCore } from './http-core.js';
import { multipartBody, checkUpload } from './multipart.js';
import { badResponse, type ErrorContext } from './error-mapping.js';
import type { FaceImageResult, FaceListing, FaceRecord, ServiceClient, SkippedRecord, SkipReason } from './types.js';

// Face management on {face_base_url}, Bearer terminal_secret (service-api.md 4.1).

const FACE_ID = /^[0-9a-f]{32}$/i;

/** A face_id goes into a URL only when it is 32 hex characters (spec-notes.md). */
export function checkFaceId(faceId: string): string {
  if (typeof faceId !== 'string' || !FACE_ID.test(faceId)) {
    const shown = typeof faceId === 'string' ? JSON.stringify(faceId.slice(0, 40)) : typeof faceId;
    throw new InvalidInputError(`face id ${shown} is not 32 hexadecimal characters; use the face_id shown by 'terminal-agent faces list'`, { details: { field: 'face_id' } });
  }
  return faceId.toLowerCase();
}

/**
 * The name as it will be sent (NFC), or an InvalidInputError when the service would not hold it
 * as given (names.ts). Voiceprint names are also limited to 32 bytes of UTF-8 by the service.
 */
export function checkName(raw: string, what: string, maxBytes?: number): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new InvalidInputError(`${what} name is empty; give a name`);
  const problem = nameProblem(raw, `${what} name`);
  if (problem) throw new InvalidInputError(problem, { details: { field: 'name' } });
  const name = canonicalName(raw);
  const bytes = Buffer.byteLength(name, 'utf8');
  if (maxBytes !== undefined && bytes > maxBytes) {
    throw new InvalidInputError(`${what} name "${escapeName(name)}" is ${bytes} bytes; the service allows at most ${maxBytes} bytes (UTF-8)`, { details: { field: 'name', bytes } });
  }
  return name;
}

/**
 * One record of a face answer, or why it cannot be used. face_id must be 32 hex characters and name
 * a string; id and group_id may be missing (0 and ''), but not of another type. Strings that held
 * bytes which are not UTF-8 (U+FFFD after decoding) are refused: the name would not be the service's.
 */
export function parseFaceRecord(x: unknown, invalidUtf8 = false): FaceRecord | { skip: SkipReason; face_id?: string } {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return { skip: 'not_an_object' };
  const o = x as Record<string, unknown>;
  if (typeof o.face_id !== 'string') return { skip: 'face_id_not_a_string' };
  const faceId = o.face_id.slice(0, 64);
  if (!FACE_ID.test(o.face_id)) return { skip: 'face_id_not_32_hex', face_id: faceId };
  if (typeof o.name !== 'string') return { skip: 'name_not_a_string', face_id: faceId };
  const id = typeof o.id === 'string' && /^\d+$/.test(o.id) ? Number(o.id) : o.id ?? 0;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return { skip: 'id_not_a_number', face_id: faceId };
  const group = o.group_id ?? '';
  if (typeof group !== 'string' && typeof group !== 'number') return { skip: 'group_id_not_a_string', face_id: faceId };
  if (invalidUtf8 && (o.name.includes('\uFFFD') || String(group).includes('\uFFFD'))) return { skip: 'invalid_utf8', face_id: faceId };
  return { face_id: o.face_id, group_id: String(group), id, name: o.name };
}

const SKIP_TEXT: Record<SkipReason, string> = {
  not_an_object: 'is not a JSON object',
  face_id_not_a_string: 'has no string face_id',
  face_id_not_32_hex: 'has a face_id that is not 32 hex characters',
  name_not_a_string: 'has no string name',
  id_not_a_number: 'has an id that is not a whole number',
  group_id_not_a_string: 'has a group_id that is not a string',
  invalid_utf8: 'has a name that is not valid UTF-8',
  duplicate_face_id: 'repeats a face_id listed before it',
};

/** Why a record was skipped, in words: `record 3 has no string name`. */
export function describeSkip(s: SkippedRecord): string {
  return `record ${s.index}${s.face_id ? ` (face_id ${JSON.stringify(s.face_id)})` : ''} ${SKIP_TEXT[s.reason]}`;
}

export function toFaceRecord(ctx: ErrorContext, status: number, x: unknown, invalidUtf8 = false): FaceRecord {
  const r = parseFaceRecord(x, invalidUtf8);
  if ('skip' in r) throw badResponse(ctx, status, `a face record that ${SKIP_TEXT[r.skip]}`);
  return r;
}

/** Parses a listing record by record: a bad record is skipped and named, the good ones kept. */
export function parseFaceListing(list: readonly unknown[], invalidUtf8: boolean): FaceListing {
  const faces: FaceRecord[] = [];
  const skipped: SkippedRecord[] = [];
  const seen = new Set<string>();
  list.forEach((x, index) => {
    const r = parseFaceRecord(x, invalidUtf8);
    if ('skip' in r) skipped.push({ index, reason: r.skip, ...(r.face_id !== undefined ? { face_id: r.face_id } : {}) });
    // Keyed as the sync keys its map (the id as listed); lower-casing 200,000 ids cost more than the parse.
    else if (seen.has(r.face_id)) skipped.push({ index, reason: 'duplicate_face_id', face_id: r.face_id });
    else {
      seen.add(r.face_id);
      faces.push(r);
    }
  });
  // Not enumerable: the listing still compares and serializes as the plain array of faces.
  return Object.defineProperty(faces, 'skipped', { value: skipped, enumerable: false }) as FaceListing;
}

function returnCode(json: unknown): { return_code: number; return_message: string } {
  const o = (json && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  return {
    return_code: typeof o.return_code === 'number' ? o.return_code : 0,
    return_message: typeof o.return_message === 'string' ? o.return_message : '',
  };
}

type FacesApi = Pick<ServiceClient, 'listFaces' | 'createFace' | 'getFace' | 'updateFace' | 'deleteFace' | 'getFaceImage'>;

export function facesApi(core: HttpCore): FacesApi {
  const face = { base: 'face', auth: 'terminal_secret' } as const;
  return {
    async listFaces(opts) {
      const spec = { ...face, operation: 'GET /faces', method: 'GET', path: '/faces', opts } as const;
      const res = await core.send(spec);
      // The spec says a bare array; tolerate the common `{data: [...]}` envelope too.
      const env = res.json as Record<string, unknown> | undefined;
      const list = Array.isArray(res.json) ? res.json : Array.isArray(env?.data) ? env.data : Array.isArray(env?.faces) ? env.faces : undefined;
      if (!list) {
        const why = res.invalidUtf8 ? 'GET /faces returned bytes that are not UTF-8 and no JSON array' : 'GET /faces did not return a JSON array';
        throw badResponse(core.errorContext(spec), res.status, why);
      }
      return parseFaceListing(list, res.invalidUtf8);
    },

    async createFace(input, opts) {
      const name = checkName(input.name, 'face');
      const image = await checkUpload('image', input.image);
      const res = await core.send({
        ...face, operation: 'POST /faces', subject: `name ${JSON.stringify(name)}`, method: 'POST', path: '/faces', opts,
        body: multipartBody({ name }, { image }),
      });
      return returnCode(res.json);
    },

    async getFace(faceId, opts) {
      const id = checkFaceId(faceId);
      const spec = { ...face, operation: 'GET /faces/{face_id}', subject: `face ${id}`, method: 'GET', path: `/faces/${id}`, opts } as const;
      const res = await core.send(spec);
      return toFaceRecord(core.errorContext(spec), res.status, res.json, res.invalidUtf8);
    },

    async updateFace(faceId, input, opts) {
      const id = checkFaceId(faceId);
      const name = checkName(input.name, 'face');
      const image = input.image && await checkUpload('image', input.image);
      const res = await core.send({
        ...face, operation: 'PUT /faces/{face_id}', subject: `face ${id}`, method: 'PUT', path: `/faces/${id}`, opts,
        body: multipartBody({ name }, { image }),
      });
      return returnCode(res.json);
    },

    async deleteFace(faceId, opts) {
      const id = checkFaceId(faceId);
      await core.send({ ...face, operation: 'DELETE /faces/{face_id}', subject: `face ${id}`, method: 'DELETE', path: `/faces/${id}`, opts });
    },

    async getFaceImage(faceId, opts): Promise<FaceImageResult> {
      const id = checkFaceId(faceId);
      const headers: Record<string, string> = { accept: 'image/*' };
      if (opts?.ifNoneMatch) headers['if-none-match'] = opts.ifNoneMatch;
      if (opts?.ifModifiedSince) headers['if-modified-since'] = opts.ifModifiedSince;
      const res = await core.open({
        ...face, operation: 'GET /faces/{face_id}/image', subject: `face ${id}`, method: 'GET', path: `/faces/${id}/image`,
        headers, alsoOk: [304], opts,
      });
      if (res.status === 304) {
        await res.cancel();
        return { notModified: true };
      }
      const h = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      const etag = h('etag');
      const lastModified = h('last-modified');
      return { ...res, notModified: false, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) };
    },
  };
}
