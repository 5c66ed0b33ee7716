import { InvalidInputError } from '../errors.js';
import type { BufferedResponse, HttpCore } from './http-core.js';
import type { CodeResult, ServiceClient } from './types.js';

// Knowledge entries ({base_url}, Bearer api_key) and notifications ({base_url}, service.other_auth)
// (service-api.md 4.2, 4.3). Knowledge bodies are "not shown": any success body is accepted.

const JSON_HEADERS = { 'content-type': 'application/json' };

/** The `code`/`message` of a success body; a body without them is taken as code 0. */
export function codeResult(res: BufferedResponse): CodeResult {
  const o = (res.json && typeof res.json === 'object' && !Array.isArray(res.json) ? res.json : {}) as Record<string, unknown>;
  return { ...o, code: typeof o.code === 'number' ? o.code : 0, message: typeof o.message === 'string' ? o.message : '' };
}

function anyBody(res: BufferedResponse): unknown {
  if (res.json !== undefined) return res.json;
  return res.text === '' ? null : res.text;
}

type KnowledgeApi = Pick<ServiceClient, 'addKnowledge' | 'deleteKnowledge' | 'notifyAgent' | 'notifyKnowledge'>;

export function knowledgeNotifyApi(core: HttpCore): KnowledgeApi {
  return {
    async addKnowledge(entry, opts) {
      if (typeof entry.content !== 'string' || entry.content === '') {
        throw new InvalidInputError('knowledge entry has no content; give the text to store');
      }
      const body: Record<string, string> = {};
      if (entry.id !== undefined) body.id = entry.id;
      if (entry.title !== undefined) body.title = entry.title;
      body.content = entry.content;
      const res = await core.send({
        operation: 'POST /knowledge', subject: entry.id ? `entry ${JSON.stringify(entry.id)}` : undefined,
        base: 'service', auth: 'api_key', method: 'POST', path: '/knowledge', headers: JSON_HEADERS,
        body: () => JSON.stringify(body), opts,
      });
      return anyBody(res);
    },

    async deleteKnowledge(id, opts) {
      if (typeof id !== 'string' || id === '') throw new InvalidInputError('knowledge id is empty; give the id of the entry to delete');
      const res = await core.send({
        operation: 'DELETE /knowledge/{id}', subject: `entry ${JSON.stringify(id)}`,
        base: 'service', auth: 'api_key', method: 'DELETE', path: `/knowledge/${encodeURIComponent(id)}`, opts,
      });
      return anyBody(res);
    },

    async notifyAgent(agentId, opts) {
      if (typeof agentId !== 'string' || agentId === '') throw new InvalidInputError('agent id is empty; give the AGENT_ID to notify');
      const res = await core.send({
        operation: 'POST /agent/notify', subject: `agent ${JSON.stringify(agentId)}`,
        base: 'service', auth: 'other', method: 'POST', path: '/agent/notify', headers: JSON_HEADERS,
        body: () => JSON.stringify({ agent_id: agentId }), opts,
      });
      return codeResult(res);
    },

    async notifyKnowledge(body, opts) {
      const payload = JSON.stringify(body ?? {});
      const res = await core.send({
        operation: 'POST /knowledge/notify', base: 'service', auth: 'other', method: 'POST', path: '/knowledge/notify',
        headers: JSON_HEADERS, body: () => payload, opts,
      });
      return codeResult(res);
    },
  };
}
