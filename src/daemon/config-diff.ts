import type { AgentConfig } from '../config/schema.js';

// What a SIGHUP can change in place. Paths the process is bound to (the state it holds locked, the
// socket it listens on) need a restart: for those the running values are kept and the operator told.

export const RESTART_ONLY_KEYS = ['state_dir', 'control.socket'] as const;

export interface ConfigChange {
  /** Dotted keys whose value changed (secret values never included, only their key). */
  changed: string[];
  /** Changed keys that only a restart applies; kept at their running value. */
  needsRestart: string[];
  /** The config to run with: the new one, with restart-only keys at their running value. */
  effective: AgentConfig;
}

export function diffConfig(running: AgentConfig, next: AgentConfig): ConfigChange {
  const changed: string[] = [];
  walk(running, next, '', changed);
  const needsRestart = changed.filter((k) => RESTART_ONLY_KEYS.some((r) => k === r || k.startsWith(`${r}.`)));
  const effective: AgentConfig = { ...next, state_dir: running.state_dir, control: { ...next.control, socket: running.control.socket } };
  return { changed: changed.filter((k) => k !== 'file'), needsRestart, effective };
}

/** True when the change is only the log level (applied without touching any component). */
export function onlyLogChanged(change: ConfigChange): boolean {
  return change.changed.every((k) => k.startsWith('log.') || RESTART_ONLY_KEYS.includes(k as (typeof RESTART_ONLY_KEYS)[number]));
}

function walk(a: unknown, b: unknown, prefix: string, out: string[]): void {
  if (isObject(a) && isObject(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      walk(a[key], b[key], prefix ? `${prefix}.${key}` : key, out);
    }
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(prefix);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
