import { readFile } from 'node:fs/promises';
import type { Auth } from './auth.js';
import { httpError, isMultipart, jsonReply, type RequestContext, type Route } from './http.js';
import { parseMultipart, requiredField, requiredFile, type UploadedFile } from './multipart.js';
import { sniffImage } from './sniff.js';
import type { FaceRow, Store } from './store.js';

// Face management under {face_base_url} = {base_url}/v1/api. Every call is scoped to the group of
// the terminal whose secret it carries: another group's face is as absent as an unknown one.

export const FACE_PREFIX = '/v1/api';

export interface FacesDeps {
  store: Store;
  auth: Auth;
  maxUploadBytes: number;
  /** Read per request: whether images carry ETag/Last-Modified and conditional requests get 304. */
  validators: () => boolean;
}

const FACE_ID = /^[0-9a-f]{32}$/;

export function faceRoutes(deps: FacesDeps): Route[] {
  const { store, auth } = deps;

  const faceOfGroup = (ctx: RequestContext, group: string): FaceRow => {
    const id = ctx.params.face_id ?? '';
    const face = FACE_ID.test(id) ? store.getFace(id) : undefined;
    if (!face || face.group_id !== group) throw httpError(404, `face ${id} not found in this terminal's group`);
    return face;
  };

  const readFaceForm = async (ctx: RequestContext, imageRequired: boolean) => {
    if (!isMultipart(ctx)) throw httpError(400, 'send the face as multipart/form-data with fields name and image');
    const form = await parseMultipart(ctx, { fields: ['name'], files: ['image'], maxFileBytes: deps.maxUploadBytes, tmpDir: store.tmpDir });
    try {
      const name = requiredField(form, 'name').trim();
      if (name.length > 128) throw httpError(400, 'name is longer than 128 characters');
      const file: UploadedFile | undefined = imageRequired || form.files.image ? requiredFile(form, 'image') : undefined;
      const kind = file && sniffImage(file.head);
      if (file && !kind) throw httpError(400, `image '${file.filename}' is not a JPEG, PNG, BMP or WebP image`);
      return { name, image: file && kind ? { file, mime: kind.mime } : undefined, form };
    } catch (err) {
      await form.cleanup();
      throw err;
    }
  };

  const p = (s: string) => `${FACE_PREFIX}${s}`;
  return [
    {
      method: 'GET', pattern: p('/faces'), errorStyle: 'faces',
      handler: (ctx) => jsonReply(200, store.listFaces(auth.faceGroup(ctx.req))),
    },
    {
      method: 'POST', pattern: p('/faces'), errorStyle: 'faces',
      handler: async (ctx) => {
        const group = auth.faceGroup(ctx.req);
        const { name, image, form } = await readFaceForm(ctx, true);
        try {
          const { file, mime } = image!;
          store.createFace(group, name, { sha: file.sha256, mime, data: await readFile(file.path) });
        } finally {
          await form.cleanup();
        }
        return jsonReply(200, { return_code: 0, return_message: 'success' });
      },
    },
    {
      method: 'GET', pattern: p('/faces/:face_id'), errorStyle: 'faces',
      handler: (ctx) => {
        const f = faceOfGroup(ctx, auth.faceGroup(ctx.req));
        return jsonReply(200, { face_id: f.face_id, group_id: f.group_id, id: f.id, name: f.name });
      },
    },
    {
      method: 'PUT', pattern: p('/faces/:face_id'), errorStyle: 'faces',
      handler: async (ctx) => {
        const group = auth.faceGroup(ctx.req);
        faceOfGroup(ctx, group);
        const { name, image, form } = await readFaceForm(ctx, false);
        try {
          const data = image && (await readFile(image.file.path));
          faceOfGroup(ctx, group); // deleted while the upload was arriving?
          store.updateFace(ctx.params.face_id!, name, image && data && { sha: image.file.sha256, mime: image.mime, data });
        } finally {
          await form.cleanup();
        }
        return jsonReply(200, { return_code: 0, return_message: 'success' });
      },
    },
    {
      method: 'DELETE', pattern: p('/faces/:face_id'), errorStyle: 'faces',
      handler: (ctx) => {
        const f = faceOfGroup(ctx, auth.faceGroup(ctx.req));
        store.deleteFace(f.face_id);
        return { status: 204 };
      },
    },
    {
      method: 'GET', pattern: p('/faces/:face_id/image'), errorStyle: 'faces',
      handler: (ctx) => {
        const f = faceOfGroup(ctx, auth.faceGroup(ctx.req));
        const imageOf = () => {
          const data = store.imageData(f.image_sha);
          if (!data) throw httpError(500, `image of face ${f.face_id} is missing from the store`);
          return data;
        };
        if (!deps.validators()) {
          // A service with no validators: no ETag, no Last-Modified, and If-* headers ignored.
          const data = imageOf();
          return { status: 200, headers: { 'Content-Type': f.image_mime, 'Content-Length': data.length }, body: data };
        }
        const etag = `"${f.image_sha}"`;
        const lastModified = new Date(Math.floor(f.updated_at / 1000) * 1000).toUTCString();
        const validators = { ETag: etag, 'Last-Modified': lastModified, 'Cache-Control': 'private, no-cache' };
        const inm = ctx.req.headers['if-none-match'];
        const ims = ctx.req.headers['if-modified-since'];
        if (inm !== undefined) {
          const tags = inm.split(',').map((t) => t.trim().replace(/^W\//, ''));
          if (tags.includes(etag) || tags.includes('*')) return { status: 304, headers: validators };
        } else if (ims !== undefined && !Number.isNaN(Date.parse(ims)) && Math.floor(f.updated_at / 1000) * 1000 <= Date.parse(ims)) {
          return { status: 304, headers: validators };
        }
        const data = imageOf();
        return { status: 200, headers: { 'Content-Type': f.image_mime, 'Content-Length': data.length, ...validators }, body: data };
      },
    },
  ];
}
