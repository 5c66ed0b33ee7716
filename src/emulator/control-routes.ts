import { UsageError } from '../errors.js';
import { httpError, jsonReply, readJsonObject, type Route } from './http.js';
import type { FaultEngine } from './faults.js';
import type { ChaosSettings, FaultRule, RequestRecord } from './types.js';

// The emulator's own control endpoints under /__emulator (never logged in `requests`, never
// subject to faults): change faults at run time from another process, read the request log.

export const CONTROL_PREFIX = '/__emulator';

export interface ControlDeps {
  faults: FaultEngine;
  requests: () => RequestRecord[];
  clearRequests: () => void;
}

const wrapUsage = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (err) {
    if (err instanceof UsageError) throw httpError(400, err.message);
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
