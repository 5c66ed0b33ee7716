import { randomBytes } from 'node:crypto';
import { UsageError } from '../errors.js';
import type { ChaosSettings, FaultAction, FaultController, FaultRule, FaultRuleState } from './types.js';

// Fault injection. Deterministic rules (tests): the next N requests matching method+path get one
// fault. Chaos (benchmarks): latency, shares of 5xx/429/drops and slow bodies, from a seeded
// generator so that a benchmark run can be repeated.

const ACTIONS: readonly FaultAction[] = ['status', 'drop', 'drop-after', 'drop-body', 'truncate', 'json', 'delay'];

export interface FaultDecision {
  /** For the request log, e.g. `rule:503`, `chaos:drop`. */
  label?: string;
  delayMs: number;
  action?: Exclude<FaultAction, 'delay'>;
  status?: number;
  retryAfter?: number;
  slowBytesPerSec?: number;
}

export interface FaultEngine extends FaultController {
  decide(method: string, path: string): FaultDecision;
}

/** A small seeded generator: the same sequence for the same seed on every machine. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

export function validateRule(rule: FaultRule): FaultRule {
  if (!ACTIONS.includes(rule.action)) throw new UsageError(`unknown fault action '${String(rule.action)}'; use one of ${ACTIONS.join(', ')}`);
  if (rule.action === 'status' && !(Number.isInteger(rule.status) && rule.status! >= 100 && rule.status! <= 599)) {
    throw new UsageError('a status fault needs an HTTP status between 100 and 599');
  }
  if (rule.action === 'delay' && !(typeof rule.delayMs === 'number' && rule.delayMs >= 0)) throw new UsageError('a delay fault needs delayMs >= 0');
  if (rule.delayMs !== undefined && !(typeof rule.delayMs === 'number' && rule.delayMs >= 0 && Number.isFinite(rule.delayMs))) throw new UsageError('a fault delayMs must be a number >= 0');
  if (rule.times !== undefined && rule.times !== Infinity && !(Number.isInteger(rule.times) && rule.times > 0)) {
    throw new UsageError('fault times must be a positive integer');
  }
  return rule;
}

export function validateChaos(c: ChaosSettings): ChaosSettings {
  for (const k of ['errorRate', 'throttleRate', 'dropRate'] as const) {
    const v = c[k];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && v <= 1)) throw new UsageError(`${k} must be a fraction between 0 and 1`);
  }
  if ((c.errorRate ?? 0) + (c.throttleRate ?? 0) + (c.dropRate ?? 0) > 1) throw new UsageError('errorRate + throttleRate + dropRate must not exceed 1');
  for (const k of ['latencyMs', 'latencyJitterMs', 'slowBodyBytesPerSec', 'retryAfter'] as const) {
    const v = c[k];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && Number.isFinite(v))) throw new UsageError(`${k} must be a number >= 0`);
  }
  return c;
}

export function createFaultEngine(initial: { rules?: readonly FaultRule[]; chaos?: ChaosSettings } = {}): FaultEngine {
  const rules: (FaultRuleState & { methodUpper?: string; re?: RegExp })[] = [];
  let chaos: ChaosSettings = {};
  let random = Math.random;
  let errorFlip = false;

  const engine: FaultEngine = {
    add(rule) {
      validateRule(rule);
      const id = randomBytes(4).toString('hex');
      rules.push({
        id, rule: { ...rule }, remaining: rule.times ?? 1, hits: 0,
        ...(rule.method && rule.method !== '*' ? { methodUpper: rule.method.toUpperCase() } : {}),
        ...(rule.path ? { re: globToRegExp(rule.path) } : {}),
      });
      return id;
    },
    remove(id) {
      const i = rules.findIndex((r) => r.id === id);
      if (i < 0) return false;
      rules.splice(i, 1);
      return true;
    },
    clear() {
      rules.length = 0;
      engine.setChaos({});
    },
    rules: () => rules.map((r) => ({ id: r.id, rule: { ...r.rule }, remaining: r.remaining, hits: r.hits })),
    setChaos(settings) {
      chaos = { ...validateChaos(settings) };
      random = chaos.seed === undefined ? Math.random : mulberry32(chaos.seed);
    },
    chaos: () => ({ ...chaos }),
    decide(method, path) {
      const d: FaultDecision = { delayMs: 0 };
      if (chaos.slowBodyBytesPerSec) d.slowBytesPerSec = chaos.slowBodyBytesPerSec;
      const rule = rules.find((r) => r.remaining > 0 && (!r.methodUpper || r.methodUpper === method) && (!r.re || r.re.test(path)));
      if (rule) {
        rule.remaining -= 1;
        rule.hits += 1;
        if (rule.remaining <= 0) rules.splice(rules.indexOf(rule), 1);
        const { action } = rule.rule;
        // A delay with any action: an answer (a 400, a drop) that comes late, as a slow service's does.
        d.delayMs = rule.rule.delayMs ?? 0;
        if (action === 'delay') {
          d.label = `rule:delay`;
          return d;
        }
        d.action = action;
        d.label = `rule:${action === 'status' ? String(rule.rule.status) : action}`;
        if (action === 'status') d.status = rule.rule.status;
        if (rule.rule.retryAfter !== undefined) d.retryAfter = rule.rule.retryAfter;
        return d;
      }
      d.delayMs = (chaos.latencyMs ?? 0) + (chaos.latencyJitterMs ? random() * chaos.latencyJitterMs : 0);
      const roll = random();
      const drop = chaos.dropRate ?? 0;
      const err = chaos.errorRate ?? 0;
      const thr = chaos.throttleRate ?? 0;
      if (roll < drop) {
        d.action = 'drop';
        d.label = 'chaos:drop';
      } else if (roll < drop + err) {
        errorFlip = !errorFlip;
        d.action = 'status';
        d.status = errorFlip ? 503 : 500;
        d.retryAfter = chaos.retryAfter ?? 1;
        d.label = `chaos:${d.status}`;
      } else if (roll < drop + err + thr) {
        d.action = 'status';
        d.status = 429;
        d.retryAfter = chaos.retryAfter ?? 1;
        d.label = 'chaos:429';
      }
      return d;
    },
  };
  for (const r of initial.rules ?? []) engine.add(r);
  engine.setChaos(initial.chaos ?? {});
  return engine;
}

/**
 * Parses a `--fault` flag: `[METHOD] PATH ACTION [xN] [retry-after=S]`, where ACTION is an HTTP
 * status, drop, drop-after, drop-body, truncate, json or delay=MS (with another action: that one,
 * after the delay). Examples: `GET /v1/api/faces 503 x2 retry-after=1`, `POST /tts truncate`,
 * `* /v1/api/* delay=500 x10`, `POST /v1/api/faces 400 delay=700`.
 */
export function parseFaultSpec(spec: string): FaultRule {
  const words = spec.trim().split(/\s+/).filter(Boolean);
  const rule: Partial<FaultRule> = {};
  if (words[0] && /^([A-Z]+|\*)$/.test(words[0])) rule.method = words.shift();
  const path = words.shift();
  if (!path || !(path.startsWith('/') || path === '*')) throw new UsageError(`--fault '${spec}': expected [METHOD] PATH ACTION [xN] [retry-after=S], e.g. 'GET /v1/api/faces 503 x2'`);
  rule.path = path;
  for (const w of words) {
    let m: RegExpExecArray | null;
    if (/^\d{3}$/.test(w)) Object.assign(rule, { action: 'status', status: Number(w) });
    else if ((m = /^x(\d+|inf)$/i.exec(w))) rule.times = m[1]!.toLowerCase() === 'inf' ? Infinity : Number(m[1]);
    else if ((m = /^retry-after=(\d+)$/.exec(w))) rule.retryAfter = Number(m[1]);
    else if ((m = /^delay=(\d+)(ms)?$/.exec(w))) rule.delayMs = Number(m[1]);
    else if ((ACTIONS as readonly string[]).includes(w) && w !== 'status' && w !== 'delay') rule.action = w as FaultAction;
    else throw new UsageError(`--fault '${spec}': cannot read '${w}'; actions are a status (503), drop, drop-after, drop-body, truncate, json, delay=MS; then xN and retry-after=S`);
  }
  // delay=MS alone is a delay; with another action (503 delay=500) that action, late.
  if (!rule.action && rule.delayMs !== undefined) rule.action = 'delay';
  if (!rule.action) throw new UsageError(`--fault '${spec}': no action given (a status such as 503, drop, drop-after, drop-body, truncate, json or delay=MS)`);
  return validateRule(rule as FaultRule);
}
