import { InvalidInputError, UsageError } from '../errors.js';
import { httpError, jsonReply, readJsonObject, type Route } from './http.js';
import type { FaultEngine } from './faults.js';
import type { ChaosSettings, EmulatorFace, EmulatorSettings, FaultRule, RequestRecord, SetImageOptions } from './types.js';

// The emulator's own control endpoints under /__emulator (never logged in `requests`, never
// subject to faults): change faults at run time from another process, read the request log.

export const CONTROL_PREFIX = '/__emulator';

export interface ControlDeps {
  faults: FaultEngine;
  requests: () => RequestRecord[];
  clearRequests: () => void;
  settings: () => EmulatorSettings;
  configure: (settings: Partial<EmulatorSettings>) => EmulatorSettings;
  /** Undefined when the face does not exist. */
  setImage: (faceId: string, image: Buffer, opts: SetImageOptions) => EmulatorFace | undefined;
}

const wrapUsage = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (err) {
    if (err instanceof UsageError || err instanceof InvalidInputError) throw httpError(400, err.message);
    throw err;
  }
};

function ruleFromJson(body: Record<string, unknown>): FaultRule {
  const times = body.times === 'inf' || body.times === null ? Infinity : body.times;
  return { ...(body as unknown as FaultRule), ...(times === undefined ? {} : { times: times as number }) };
}

export function controlRoutes(deps: ControlDeps): Route[] {
  const p = (s: string) => `${CONTROL_PREFIX}${s}`;
  const snapshot = () => ({ rules: deps.faults.rules(), chaos: deps.faults.chaos() });
  return [
    { method: 'GET', pattern: p('/faults'), errorStyle: 'code', handler: () => jsonReply(200, snapshot()) },
    {
      method: 'POST', pattern: p('/faults'), errorStyle: 'code',
      handler: async (ctx) => {
        const body = await readJsonObject(ctx);
        const rules = Array.isArray(body.rules) ? (body.rules as Record<string, unknown>[]) : [body];
        const ids = wrapUsage(() => rules.map((r) => deps.faults.add(ruleFromJson(r))));
        return jsonReply(200, { ids, ...snapshot() });
      },
    },
    {
      method: 'DELETE', pattern: p('/faults'), errorStyle: 'code',
      handler: () => {
        deps.faults.clear();
        return jsonReply(200, snapshot());
      },
    },
    {
      method: 'DELETE', pattern: p('/faults/:id'), errorStyle: 'code',
      handler: (ctx) => {
        if (!deps.faults.remove(ctx.params.id!)) throw httpError(404, `no fault rule ${ctx.params.id}`);
        return jsonReply(200, snapshot());
      },
    },
    { method: 'GET', pattern: p('/chaos'), errorStyle: 'code', handler: () => jsonReply(200, deps.faults.chaos()) },
    {
      method: 'PUT', pattern: p('/chaos'), errorStyle: 'code',
      handler: async (ctx) => {
        const body = await readJsonObject(ctx, { allowEmpty: true });
        wrapUsage(() => deps.faults.setChaos(body as ChaosSettings));
        return jsonReply(200, deps.faults.chaos());
      },
    },
    { method: 'GET', pattern: p('/settings'), errorStyle: 'code', handler: () => jsonReply(200, deps.settings()) },
    {
      method: 'PUT', pattern: p('/settings'), errorStyle: 'code',
      handler: async (ctx) => {
        const body = await readJsonObject(ctx);
        if (body.validators !== undefined && typeof body.validators !== 'boolean') throw httpError(400, '"validators" must be true or false');
        return jsonReply(200, deps.configure(body.validators === undefined ? {} : { validators: body.validators }));
      },
    },
    {
      // set_image: an administrator replacing a face's image in the cloud, with or without a new id.
      method: 'POST', pattern: p('/set_image'), errorStyle: 'code',
      handler: async (ctx) => {
        const body = await readJsonObject(ctx);
        if (typeof body.face_id !== 'string' || typeof body.image_base64 !== 'string') throw httpError(400, 'send {"face_id": "...", "image_base64": "...", "change_id": false}');
        if (body.change_id !== undefined && typeof body.change_id !== 'boolean') throw httpError(400, '"change_id" must be true or false');
        const face = wrapUsage(() => deps.setImage(body.face_id as string, Buffer.from(body.image_base64 as string, 'base64'), { changeId: body.change_id === true }));
        if (!face) throw httpError(404, `no face ${body.face_id}`);
        return jsonReply(200, face);
      },
    },
    { method: 'GET', pattern: p('/requests'), errorStyle: 'code', handler: () => jsonReply(200, deps.requests()) },
    {
      method: 'DELETE', pattern: p('/requests'), errorStyle: 'code',
      handler: () => {
        deps.clearRequests();
        return { status: 204 };
      },
    },
  ];
}
