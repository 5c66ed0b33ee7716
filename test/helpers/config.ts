import { join } from 'node:path';
import { configSchema, type AgentConfig } from '../../src/config/schema.js';
import { tmpDir } from './tmp.js';

export type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

export const TEST_TERMINAL_SECRET = 'test-terminal-secret-0123456789';

/**
 * A resolved AgentConfig for tests, with no YAML: the schema's defaults, loopback base URLs (point
 * them at the emulator by passing `service: { base_url, face_base_url }`), a terminal secret, and
 * state_dir / enroll.dir / control.socket in a temp dir removed after the test. Overrides are in
 * the resolved form (milliseconds, bytes) and deep-merged; arrays replace. enroll.dir follows an
 * overridden state_dir unless given itself.
 */
export function makeTestConfig(overrides: DeepPartial<AgentConfig> = {}): AgentConfig {
  const stateDir = overrides.state_dir ?? tmpDir('ta-cfg-');
  const base = configSchema.parse({
    service: { base_url: 'http://127.0.0.1:9', face_base_url: 'http://127.0.0.1:9/v1/api', terminal_secret: TEST_TERMINAL_SECRET },
    state_dir: stateDir,
    control: { socket: join(stateDir, 'control.sock') },
  }) as AgentConfig;
  // Most tests drop stand-in images (a JPEG header and random bytes): the face check is theirs to
  // turn on (test/facecheck/, test/enroll/face-check.test.ts).
  base.enroll.face_check.mode = 'off';
  const merged = deepMerge(base, overrides) as AgentConfig;
  if (overrides.enroll?.dir === undefined) merged.enroll.dir = join(merged.state_dir, 'enroll');
  if (overrides.control?.socket === undefined) merged.control.socket = join(merged.state_dir, 'control.sock');
  return merged;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = v === undefined ? base[k] : deepMerge(base[k], v);
  return out;
}
