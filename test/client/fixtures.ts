import { writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { startTestEmulator, type Emulator, type EmulatorOptions } from '../helpers/emulator.js';
import { createServiceClient, type ServiceClientDeps, type ServiceConfig } from '../../src/client/service-client.js';
import type { RequestEvent, ServiceClient } from '../../src/client/types.js';
import { silentLogger } from '../../src/log/logger.js';
import { makeTestConfig } from '../helpers/config.js';
import { wavHeader as pcmWavHeader } from '../../src/audio/wav.js';

// Shared by the client tests: an emulator on loopback, a client pointed at it with fast retries,
// and real media files (the emulator sniffs bytes like the real service).

export const TEST_UA = 'terminal-agent/9.9.9-test';

export interface Rig {
  emu: Emulator;
  config: ServiceConfig;
  client: ServiceClient;
  events: RequestEvent[];
  /** Another client on the same emulator with changed config/deps. */
  clientWith(service: Partial<ServiceConfig>, deps?: Partial<ServiceClientDeps>): ServiceClient;
}

export async function startRig(opts: EmulatorOptions = {}): Promise<Rig> {
  const emu = await startTestEmulator({ tts: 'tone', trainMs: 300, ...opts });
  const clients: ServiceClient[] = [];
  const events: RequestEvent[] = [];
  const base = makeTestConfig({
    service: {
      base_url: emu.baseUrl,
      face_base_url: emu.faceBaseUrl,
      terminal_secret: emu.terminals[0]!.terminal_secret,
      api_key: emu.apiKey,
      retries: 2,
      request_timeout: 5_000,
    },
  }).service;
  const clientWith = (service: Partial<ServiceConfig>, deps: Partial<ServiceClientDeps> = {}) => {
    const c = createServiceClient({
      config: { ...base, ...service },
      logger: silentLogger(),
      userAgent: TEST_UA,
      onRequest: (e) => events.push(e),
      backoff: { initialMs: 20, maxMs: 80 },
      ...deps,
    });
    clients.push(c);
    return c;
  };
  const client = clientWith({});
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await emu.close();
  });
  return { emu, config: base, client, events, clientWith };
}

// A real 1x1 PNG.
export const PNG_BYTES = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
// JPEG markers (SOI, APP0/JFIF, EOI): what sniffing looks at.
export const JPEG_BYTES = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]),
  Buffer.alloc(200, 0x11),
  Buffer.from([0xff, 0xd9]),
]);

export function writeFixture(dir: string, name: string, bytes: Buffer | string): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

/** A canonical 16-bit PCM header (src/audio/wav.ts), the sizes as given. */
export function wavHeader(dataBytes: number, sampleRate = 16000, channels = 1): Buffer {
  return pcmWavHeader({ sampleRate, channels, bitsPerSample: 16 }, dataBytes);
}

/** A 16-bit mono WAV of a quiet tone, written in 1 MB pieces (never whole in memory). */
export function writeWav(dir: string, name: string, seconds: number, sampleRate = 16000): string {
  const path = join(dir, name);
  const dataBytes = Math.round(seconds * sampleRate) * 2;
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, wavHeader(dataBytes, sampleRate));
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < chunk.length / 2; i++) chunk.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate)), i * 2);
    for (let left = dataBytes; left > 0; left -= chunk.length) writeSync(fd, chunk, 0, Math.min(left, chunk.length));
  } finally {
    closeSync(fd);
  }
  return path;
}

export const HEX32 = /^[0-9a-f]{32}$/;
