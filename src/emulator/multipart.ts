import busboy from 'busboy';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { httpError, type RequestContext } from './http.js';
import { SNIFF_BYTES } from './sniff.js';

// multipart/form-data parsing that streams every file part to a temp file while hashing it, so a
// 50 MB upload never sits in memory. The caller adopts the files it keeps and calls cleanup().

export interface UploadedFile {
  field: string;
  filename: string;
  mimeType: string;
  path: string;
  size: number;
  sha256: string;
  /** The first bytes, for sniffing. */
  head: Buffer;
}

export interface MultipartForm {
  fields: Record<string, string>;
  files: Record<string, UploadedFile>;
  /** Removes the temp files not adopted (adoption renames them away; rm is then a no-op). */
  cleanup(): Promise<void>;
}

export interface MultipartSpec {
  fields: readonly string[];
  files: readonly string[];
  /** Names accepted either as a text field or as a file part. */
  either?: readonly string[];
  maxFileBytes: number;
  tmpDir: string;
}

export async function parseMultipart(ctx: RequestContext, spec: MultipartSpec): Promise<MultipartForm> {
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: ctx.req.headers,
      limits: { fileSize: spec.maxFileBytes, fieldSize: 1024 * 1024, fields: 32, files: 8, parts: 40 },
    });
  } catch (err) {
    throw httpError(400, `cannot read the multipart body: ${(err as Error).message}`);
  }
  const fields: Record<string, string> = {};
  const files: Record<string, UploadedFile> = {};
  const writes: Promise<void>[] = [];
  const temps: string[] = [];
  let problem: ReturnType<typeof httpError> | undefined;
  const fail = (status: number, message: string) => {
    problem ??= httpError(status, message);
  };

  bb.on('field', (name, value, info) => {
    if (spec.files.includes(name) && !spec.either?.includes(name)) return fail(400, `'${name}' must be a file part (with a filename), not a text field`);
    if (!spec.fields.includes(name)) return fail(400, `unexpected field '${name}'; this endpoint takes ${[...spec.fields, ...spec.files].join(', ')}`);
    if (info.valueTruncated) return fail(413, `field '${name}' is over 1 MB`);
    if (!(name in fields)) fields[name] = value;
  });
  bb.on('file', (name, stream, info) => {
    if (!spec.files.includes(name) || name in files || problem) {
      if (!spec.files.includes(name)) {
        if (spec.fields.includes(name)) fail(400, `'${name}' must be a text field, not a file part`);
        else fail(400, `unexpected file part '${name}'; this endpoint takes ${[...spec.fields, ...spec.files].join(', ')}`);
      }
      stream.resume();
      return;
    }
    const path = join(spec.tmpDir, `upload-${randomBytes(8).toString('hex')}`);
    temps.push(path);
    const hash = createHash('sha256');
    const headParts: Buffer[] = [];
    let size = 0;
    let headSize = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        size += chunk.length;
        if (headSize < SNIFF_BYTES) {
          headParts.push(chunk.subarray(0, SNIFF_BYTES - headSize));
          headSize += Math.min(chunk.length, SNIFF_BYTES - headSize);
        }
        cb(null, chunk);
      },
    });
    stream.on('limit', () => fail(413, `file '${name}' is over ${spec.maxFileBytes} bytes`));
    writes.push(pipeline(stream, tap, createWriteStream(path)).then(() => {
      files[name] = { field: name, filename: info.filename ?? '', mimeType: info.mimeType, path, size, sha256: hash.digest('hex'), head: Buffer.concat(headParts) };
    }));
  });

  const cleanup = async () => {
    await Promise.all(temps.map((p) => rm(p, { force: true })));
  };
  try {
    await pipeline(ctx.body(), bb);
    await Promise.all(writes);
  } catch (err) {
    await Promise.allSettled(writes);
    await cleanup();
    if (problem) throw problem;
    throw httpError(400, `cannot read the multipart body: ${(err as Error).message}`);
  }
  if (problem) {
    await cleanup();
    throw problem;
  }
  return { fields, files, cleanup };
}

/** A required text field, non-empty after trimming. */
export function requiredField(form: MultipartForm, name: string, style = 'field'): string {
  const v = form.fields[name];
  if (v === undefined || v.trim() === '') throw httpError(400, `missing required ${style} '${name}'`);
  return v;
}

export function requiredFile(form: MultipartForm, name: string): UploadedFile {
  const f = form.files[name];
  if (!f) throw httpError(400, `missing required file part '${name}'`);
  if (f.size === 0) throw httpError(400, `file part '${name}' is empty`);
  return f;
}
