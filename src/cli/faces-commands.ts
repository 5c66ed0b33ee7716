import { resolve } from 'node:path';
import { stringOpt, type CliContext, type CommandSpec } from './command.js';
import { writeJson, writeLine, writeTable, writeWarning, type Column } from './output.js';
import { canonicalName, escapeName } from '../client/names.js';
import type { FaceRecord, ServiceClient, CallOptions, SkippedRecord } from '../client/types.js';
import { BadResponseError, UsageError, isFsError, outputFileError } from '../errors.js';

// `faces ...`: one command object per API call, so that later additions (--cached, sync) stay
// small edits. The faces API's checks, the atomic file writes (node:crypto) and the service
// commands' helpers (api-client.ts: the image and name checks, node:fs/promises) are imported by
// the commands that use them: `faces list --cached` must start about as fast as a bare node.

const facesApi = () => import('../client/faces-api.js');
const checkFaceImage: typeof import('./face-image-check.js').checkFaceImage = async (...a) => (await import('./face-image-check.js')).checkFaceImage(...a);
const apiClient = () => import('./api-client.js');

const FACE_COLUMNS: Column<FaceRecord>[] = [
  { header: 'face_id', value: (f) => f.face_id },
  { header: 'name', value: (f) => f.name },
  { header: 'id', value: (f) => f.id },
  { header: 'group_id', value: (f) => f.group_id },
];

function printFace(ctx: CliContext, json: boolean, face: FaceRecord, verb?: string): void {
  if (json) return writeJson(ctx, face);
  // Values from the service, one line each: a line break in a name is shown escaped.
  if (verb) writeLine(ctx, `${verb} face "${escapeName(face.name)}": ${escapeName(face.face_id)}`);
  else for (const c of FACE_COLUMNS) writeLine(ctx, `${c.header.padEnd(9)} ${escapeName(String(c.value(face)))}`);
}

async function faceIdArg(value: string | undefined): Promise<string> {
  if (value === undefined) throw new UsageError('a face ID is needed');
  return (await facesApi()).checkFaceId(value);
}

/**
 * POST /faces returns no face_id: the new record is the face with this name that was not in the
 * group before the upload (spec-notes.md). Two new ones (someone else added the same name at the
 * same moment): the highest numeric id, the most recent.
 */
export async function createFaceAndFind(client: ServiceClient, name: string, image: { path: string; contentType: string }, call: CallOptions): Promise<FaceRecord> {
  const before = new Set((await client.listFaces(call)).map((f) => f.face_id));
  await client.createFace({ name, image }, call);
  const fresh = (await client.listFaces(call)).filter((f) => canonicalName(f.name) === canonicalName(name) && !before.has(f.face_id));
  const newest = fresh.sort((a, b) => b.id - a.id)[0];
  if (!newest) {
    throw new BadResponseError(`POST /faces: the service accepted face "${escapeName(name)}" but no new face of that name is in the group's list`, { operation: 'POST /faces' });
  }
  return newest;
}

/** Malformed records of a listing, on stderr (stdout keeps the good records, JSON or table). */
async function warnSkipped(ctx: CliContext, json: boolean, skipped: readonly SkippedRecord[]): Promise<void> {
  if (skipped.length === 0) return;
  const { describeSkip } = await facesApi();
  const shown = skipped.slice(0, 10).map((s) => `  skipped: ${describeSkip(s)}`);
  const more = skipped.length > shown.length ? [`  ... and ${skipped.length - shown.length} more`] : [];
  writeWarning(ctx, json, {
    text: `${skipped.length} malformed record(s) in the service's answer were left out${json ? '' : ':'}`,
    code: 'TA_WARN_SKIPPED_RECORDS',
    details: { skipped: skipped.length, records: skipped.map((s) => ({ ...s, message: describeSkip(s) })) },
    lines: [...shown, ...more],
  });
}

const list: CommandSpec = {
  path: ['faces', 'list'],
  summary: "list the terminal group's face records",
  positionals: { min: 0, max: 0 },
  options: { cached: { type: 'boolean', description: 'read the local face cache (state_dir), with no network' } },
  run: async (args, ctx) => args.values.cached === true ? (await import('./faces-list-cached.js')).listCachedCommand(args, ctx) : (await apiClient()).withClient(args, ctx, async ({ client, call }) => {
    const faces = await client.listFaces(call);
    await warnSkipped(ctx, args.global.json, faces.skipped);
    if (args.global.json) return writeJson(ctx, faces);
    writeTable(ctx, faces, FACE_COLUMNS, '(no faces in this group)');
  }),
};

const show: CommandSpec = {
  path: ['faces', 'show'],
  summary: 'show one face record',
  usage: 'ID',
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: async (args, ctx) => {
    const id = await faceIdArg(args.positionals[0]);
    await (await apiClient()).withClient(args, ctx, async ({ client, call }) => printFace(ctx, args.global.json, await client.getFace(id, call)));
  },
};

const add: CommandSpec = {
  path: ['faces', 'add'],
  summary: 'create a face from an image (JPEG, PNG, BMP, WebP) and print its face_id',
  usage: '--name N IMAGE',
  options: { name: { type: 'string', description: 'the face name', valueName: 'N' } },
  positionals: { min: 1, max: 1, names: ['IMAGE'] },
  run: async (args, ctx) => {
    const { checkImageFile, checkNameArg, withClient } = await apiClient();
    const name = checkNameArg(stringOpt(args, 'name'), "'faces add'");
    const path = resolve(ctx.cwd, args.positionals[0]!);
    const contentType = await checkImageFile(path);
    await withClient(args, ctx, async (session) => {
      const { client, call, config } = session;
      await checkFaceImage(ctx, args.global.json, config, path, args.positionals[0]!);
      const face = await createFaceAndFind(client, name, { path, contentType }, call);
      printFace(ctx, args.global.json, face, 'created');
      await (await import('./faces-update-cache.js')).refreshOwnCache(ctx, args.global.json, session, face.face_id);
    });
  },
};

const update: CommandSpec = {
  path: ['faces', 'update'],
  summary: "change a face's name and/or image",
  usage: 'ID [--name N] [IMAGE]',
  options: { name: { type: 'string', description: 'the new name (default: keep the current one)', valueName: 'N' } },
  positionals: { min: 1, max: 2, names: ['ID', 'IMAGE'] },
  run: async (args, ctx) => {
    const { checkImageFile, checkNameArg, withClient } = await apiClient();
    const id = await faceIdArg(args.positionals[0]);
    const given = stringOpt(args, 'name');
    const imageArg = args.positionals[1];
    if (given === undefined && imageArg === undefined) throw new UsageError("'faces update' needs --name N, an IMAGE, or both");
    let name = given === undefined ? undefined : checkNameArg(given, "'faces update'");
    const path = imageArg === undefined ? undefined : resolve(ctx.cwd, imageArg);
    const contentType = path ? await checkImageFile(path) : undefined;
    await withClient(args, ctx, async (session) => {
      const { client, call, config } = session;
      if (path) await checkFaceImage(ctx, args.global.json, config, path, imageArg!);
      // PUT requires the name: keep the current one when only the image changes.
      name ??= (await client.getFace(id, call)).name;
      await client.updateFace(id, { name, ...(path && contentType ? { image: { path, contentType } } : {}) }, call);
      printFace(ctx, args.global.json, await client.getFace(id, call), 'updated');
      await (await import('./faces-update-cache.js')).refreshOwnCache(ctx, args.global.json, session, id);
    });
  },
};

const del: CommandSpec = {
  path: ['faces', 'delete'],
  summary: 'delete a face record',
  usage: 'ID',
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: async (args, ctx) => {
    const id = await faceIdArg(args.positionals[0]);
    await (await apiClient()).withClient(args, ctx, async ({ client, call }) => {
      await client.deleteFace(id, call);
      if (args.global.json) writeJson(ctx, { face_id: id, deleted: true });
      else writeLine(ctx, `deleted face ${id}`);
    });
  },
};

const image: CommandSpec = {
  path: ['faces', 'image'],
  summary: "download a face's image (to stdout, or to FILE with -o)",
  usage: 'ID [-o FILE]',
  options: { out: { type: 'string', short: 'o', description: 'write the image to FILE (replaced atomically)', valueName: 'FILE' } },
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: async (args, ctx) => {
    const id = await faceIdArg(args.positionals[0]);
    const outArg = stringOpt(args, 'out');
    const toStdout = outArg === undefined || outArg === '-';
    if (toStdout && (ctx.io.stdout as { isTTY?: boolean }).isTTY) throw new UsageError('refusing to write image bytes to a terminal; use -o FILE or a pipe');
    const path = toStdout ? undefined : resolve(ctx.cwd, outArg);
    const { streamToTemp, commitTemp, ensureWritable } = await import('../util/fs-atomic.js');
    if (path) await ensureWritable(path);
    await (await apiClient()).withClient(args, ctx, async ({ client, call }) => {
      const res = await client.getFaceImage(id, call);
      if (res.notModified) throw new BadResponseError('GET /faces/{face_id}/image: 304 without a conditional request');
      if (!path) {
        const { pipeline } = await import('node:stream/promises');
        await pipeline(res.body, ctx.io.stdout, { end: false });
        return;
      }
      let written: { tmp: string; bytes: number } | undefined;
      try {
        written = await streamToTemp(path, res.body);
        await commitTemp(written.tmp, path);
      } catch (err) {
        if (written) await (await import('node:fs/promises')).rm(written.tmp, { force: true });
        throw isFsError(err) ? outputFileError(path, err) : err;
      }
      const { bytes } = written;
      if (args.global.json) writeJson(ctx, { face_id: id, path, bytes, content_type: res.contentType });
      else writeLine(ctx, `wrote ${bytes} bytes (${res.contentType}) to ${path}`);
    });
  },
};

const sync: CommandSpec = {
  path: ['faces', 'sync'],
  summary: 'sync the local face cache now (through the running daemon, else in this process)',
  positionals: { min: 0, max: 0 },
  run: async (args, ctx) => (await import('./faces-sync-command.js')).syncCommand(args, ctx),
};

export const facesCommands: CommandSpec[] = [list, show, add, update, del, image, sync];
