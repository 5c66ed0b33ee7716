import { InvalidInputError } from '../errors.js';
import { canonicalName, escapeName, nameProblem } from './names.js';
import type { HttpCore } from './http-core.js';
import { multipartBody, checkUpload } from './multipart.js';
import { badResponse, type ErrorContext } from './error-mapping.js';
import type { FaceImageResult, FaceRecord, ServiceClient } from './types.js';

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

export function toFaceRecord(ctx: ErrorContext, status: number, x: unknown): FaceRecord {
  const o = (x && typeof x === 'object' ? x : {}) as Record<string, unknown>;
  const id = typeof o.id === 'string' && /^\d+$/.test(o.id) ? Number(o.id) : o.id;
  if (typeof o.face_id !== 'string' || typeof o.name !== 'string') {
    throw badResponse(ctx, status, 'a face record without a string face_id and name');
  }
  return {
    face_id: o.face_id,
    group_id: typeof o.group_id === 'string' ? o.group_id : String(o.group_id ?? ''),
    id: typeof id === 'number' ? id : 0,
    name: o.name,
  };
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
      if (!list) throw badResponse(core.errorContext(spec), res.status, 'GET /faces did not return a JSON array');
      return list.map((x) => toFaceRecord(core.errorContext(spec), res.status, x));
    },

    async createFace(input, opts) {
      const name = checkName(input.name, 'face');
      await checkUpload('image', input.image);
      const res = await core.send({
        ...face, operation: 'POST /faces', subject: `name ${JSON.stringify(name)}`, method: 'POST', path: '/faces', opts,
        body: multipartBody({ name }, { image: input.image }),
      });
      return returnCode(res.json);
    },

    async getFace(faceId, opts) {
      const id = checkFaceId(faceId);
      const spec = { ...face, operation: 'GET /faces/{face_id}', subject: `face ${id}`, method: 'GET', path: `/faces/${id}`, opts } as const;
      const res = await core.send(spec);
      return toFaceRecord(core.errorContext(spec), res.status, res.json);
    },

    async updateFace(faceId, input, opts) {
      const id = checkFaceId(faceId);
      const name = checkName(input.name, 'face');
      if (input.image) await checkUpload('image', input.image);
      const res = await core.send({
        ...face, operation: 'PUT /faces/{face_id}', subject: `face ${id}`, method: 'PUT', path: `/faces/${id}`, opts,
        body: multipartBody({ name }, { image: input.image }),
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
