import { createEventBus, type AgentEvent } from '../../src/events/event-bus.js';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Registry } from 'prom-client';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestEmulator, type Emulator } from '../helpers/emulator.js';
import { makeTestConfig } from '../helpers/config.js';
import { tmpDir } from '../helpers/tmp.js';
import { makeTestAlsa, type TestAlsa, type TestAlsaOptions } from '../helpers/alsa.js';
import { createServiceClient } from '../../src/client/service-client.js';
import type { ServiceClient } from '../../src/client/types.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { createLogger, silentLogger } from '../../src/log/logger.js';
import { createSpeech, type Speech } from '../../src/audio/speech.js';
import type { PlayerDeps } from '../../src/audio/player.js';
import { parseWavHeader } from '../../src/audio/wav.js';
import type { AgentConfig } from '../../src/config/schema.js';

// A speech component wired like the daemon wires it: real emulator (tone engine, deterministic
// audio), real service client, real SQLite, real player processes on ALSA test devices.

export interface SpeechFixture {
  dir: string;
  alsa: TestAlsa;
  emulator: Emulator;
  config: AgentConfig;
  client: ServiceClient;
  db: Db;
  metrics: Registry;
  speech: Speech;
  /** PCM the emulator synthesizes for `text` (fetched directly, then the request log is cleared). */
  expectedPcm(text: string, ratios?: { volume_ratio?: number; speed_ratio?: number; pitch_ratio?: number }): Promise<Buffer>;
  ttsRequests(): number;
  /** JSON log lines of the speech component (debug and up), as the daemon would write them. */
  logs: Array<Record<string, unknown>>;
  /** What the speech component published on its event bus. */
  events: AgentEvent[];
}

export interface SpeechFixtureOptions {
  alsa?: TestAlsaOptions;
  device?: string;
  cacheSize?: number;
  warm?: boolean;
  /** service.request_timeout (also the /tts stall timeout), ms. */
  requestTimeout?: number;
  /** The /tts stall timeout alone: service.request_timeout as speech sees it (the client keeps its own). */
  stallTimeoutMs?: number;
  /** More player options (a stand-in script, watchdog bounds); `env` is merged over the ALSA one. */
  player?: Omit<PlayerDeps, 'device' | 'logger' | 'warm'>;
  stopTimeoutMs?: number;
  /** Another service than the fixture's emulator (a hostile one: test/helpers/hostile-service.ts). */
  service?: { url: string; faceBaseUrl: string };
  /** tts.* keys over the defaults (the bounds of one answer, say). */
  tts?: Partial<AgentConfig['tts']>;
}

export async function speechFixture(opts: SpeechFixtureOptions = {}): Promise<SpeechFixture> {
  const dir = tmpDir('ta-speech-');
  const alsa = makeTestAlsa(dir, opts.alsa);
  const emulator = await startTestEmulator({ tts: 'tone' });
  const config = makeTestConfig({
    state_dir: dir,
    service: { base_url: opts.service?.url ?? emulator.baseUrl, face_base_url: opts.service?.faceBaseUrl ?? emulator.faceBaseUrl, retries: 0, ...(opts.requestTimeout ? { request_timeout: opts.requestTimeout } : {}) },
    audio: { output_device: opts.device ?? alsa.device },
    tts: { cache_size: opts.cacheSize ?? 8 * 1024 * 1024, ...opts.tts },
  });
  const client = createServiceClient({ config: config.service, logger: silentLogger(), userAgent: 'terminal-agent-test' });
  const db = openDatabase({ path: join(dir, 'agent.db') });
  const metrics = new Registry();
  const logs: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } }).child({ component: 'speech' });
  const speechConfig = opts.stallTimeoutMs ? { ...config, service: { ...config.service, request_timeout: opts.stallTimeoutMs } } : config;
  const events: AgentEvent[] = [];
  const bus = createEventBus();
  bus.subscribe((e) => events.push(e));
  const speech = createSpeech({
    config: speechConfig, logger, db, client, metrics, events: bus,
    playerOptions: { ...opts.player, env: { ...alsa.env, ...opts.player?.env }, ...(opts.warm !== undefined ? { warm: opts.warm } : {}) },
    ...(opts.stopTimeoutMs !== undefined ? { stopTimeoutMs: opts.stopTimeoutMs } : {}),
  });
  onTestFinished(async () => {
    await speech.stop();
    await client.close();
    db.close();
  });
  await speech.start();
  return {
    dir, alsa, emulator, config, client, db, metrics, speech, logs, events,
    async expectedPcm(text, ratios = {}) {
      const res = await fetch(`${emulator.baseUrl}/tts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, ...ratios }) });
      const wav = Buffer.from(await res.arrayBuffer());
      emulator.clearRequests();
      const h = parseWavHeader(wav);
      return wav.subarray(h.dataOffset, h.dataOffset + (h.dataBytes ?? wav.length));
    },
    ttsRequests: () => emulator.requests.filter((r) => r.method === 'POST' && r.path === '/tts').length,
  };
}

/** Polls `check` until it holds (no timing assertion: it only bounds how long a test may hang). */
export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
