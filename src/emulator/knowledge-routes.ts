import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Auth } from './auth.js';
import { httpError, isJson, isMultipart, jsonReply, readJsonObject, type RequestContext, type Route } from './http.js';
import { parseMultipart } from './multipart.js';
import type { Store } from './store.js';

// Knowledge entries (API key) and the two notify endpoints. A POST with an existing id replaces
// the entry: the agent mirrors a folder, and an edited file is uploaded again under its id.

export interface KnowledgeDeps {
  store: Store;
  auth: Auth;
  maxUploadBytes: number;
}

const MAX_CONTENT = 10 * 1024 * 1024;

async function readEntry(ctx: RequestContext, deps: KnowledgeDeps): Promise<{ id?: string; title?: string; content: string }> {
  let raw: Record<string, unknown>;
  if (isMultipart(ctx)) {
    // `content` may come as a text field or as a file part (a whole document).
    const form = await parseMultipart(ctx, {
      fields: ['id', 'title', 'content'], files: ['content'], either: ['content'], maxFileBytes: MAX_CONTENT, tmpDir: deps.store.tmpDir,
    });
    try {
      raw = { ...form.fields };
      const file = form.files.content;
      if (raw.content === undefined && file) raw.content = await readFile(file.path, 'utf8');
    } finally {
      await form.cleanup();
    }
  } else if (isJson(ctx)) {
    raw = await readJsonObject(ctx);
  } else {
    throw httpError(400, 'send the entry as application/json or multipart/form-data with fields id, title, content');
  }
  const { id, title, content } = raw;
  if (typeof content !== 'string' || content.trim() === '') throw httpError(400, "missing required field 'content' (a non-empty string)");
  if (Buffer.byteLength(content) > MAX_CONTENT) throw httpError(413, 'content is over 10 MB');
  if (id !== undefined && (typeof id !== 'string' || id.trim() === '' || id.length > 256)) throw httpError(400, "field 'id' must be a non-empty string of at most 256 characters");
  if (title !== undefined && typeof title !== 'string') throw httpError(400, "field 'title' must be a string");
  return { ...(id !== undefined ? { id } : {}), ...(title !== undefined ? { title } : {}), content };
}

export function knowledgeRoutes(deps: KnowledgeDeps): Route[] {
  const { store, auth } = deps;
  return [
    {
      method: 'POST', pattern: '/knowledge', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireApiKey(ctx.req);
        const entry = await readEntry(ctx, deps);
        const id = entry.id ?? `kb_${randomBytes(8).toString('hex')}`;
        store.putKnowledge(id, entry.title ?? null, entry.content);
        return jsonReply(200, { code: 0, message: 'success', data: { id } });
      },
    },
    {
      method: 'DELETE', pattern: '/knowledge/:id', errorStyle: 'code',
      handler: (ctx) => {
        auth.requireApiKey(ctx.req);
        if (!store.deleteKnowledge(ctx.params.id!)) throw httpError(404, `knowledge entry '${ctx.params.id}' does not exist`);
        return jsonReply(200, { code: 0, message: 'success' });
      },
    },
    {
      method: 'POST', pattern: '/agent/notify', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireOther(ctx.req);
        const body = await readJsonObject(ctx);
        if (typeof body.agent_id !== 'string' || body.agent_id.trim() === '') throw httpError(400, "missing required field 'agent_id' (a non-empty string)");
        store.addNotification('agent', body);
        return jsonReply(200, { code: 0, message: 'success' });
      },
    },
    {
      method: 'POST', pattern: '/knowledge/notify', errorStyle: 'code',
      handler: async (ctx) => {
        auth.requireOther(ctx.req);
        const body = await readJsonObject(ctx, { allowEmpty: true });
        store.addNotification('knowledge', body);
        return jsonReply(200, { code: 0, message: 'success' });
      },
    },
  ];
}
