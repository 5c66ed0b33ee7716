import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// A speaker with no sound card: ALSA's `null` plugin as the default device, and a `file` plugin
// device whose played bytes are appended (through a `cat >>` pipe, since the plugin truncates its
// file on every open) to a file, so tests assert exactly what reached the device, utterance after
// utterance. Loaded next to the system's config through ALSA_CONFIG_PATH, in the player child's
// environment only (../../shared/audio-without-hardware.md).

export interface TestAlsa {
  dir: string;
  confPath: string;
  /** Environment for the player process. */
  env: NodeJS.ProcessEnv;
  /** The capturing output device (give it as audio.output_device). */
  device: string;
  /** Where the bytes played on `device` accumulate. */
  playedPath: string;
  /** Bytes played on `device` so far. */
  played(): Buffer;
  /** Waits until at least `bytes` were played (the pipe's `cat` writes asynchronously). */
  waitPlayed(bytes: number, timeoutMs?: number): Promise<Buffer>;
}

export interface TestAlsaOptions {
  /** Name of the capturing device. Default `testout`. */
  name?: string;
  /**
   * Make the ALSA "default" device unopenable, as on a machine with no sound card: `speaker`
   * then aborts (SIGABRT) as soon as it loads, whatever device is asked for.
   */
  brokenDefault?: boolean;
  baseEnv?: NodeJS.ProcessEnv;
}

export function makeTestAlsa(dir: string, opts: TestAlsaOptions = {}): TestAlsa {
  const name = opts.name ?? 'testout';
  const confPath = join(dir, `asound-${name}.conf`);
  const playedPath = join(dir, `${name}.played.raw`);
  writeFileSync(playedPath, '');
  writeFileSync(confPath, [
    opts.brokenDefault ? 'pcm.!default { type hw card 9 }' : 'pcm.!default { type null }',
    `pcm.${name} {`,
    '  type file',
    '  slave.pcm null',
    `  file ${JSON.stringify(`|cat >> '${playedPath}'`)}`,
    '  format "raw"',
    '}',
    '',
  ].join('\n'));
  const played = () => (existsSync(playedPath) ? readFileSync(playedPath) : Buffer.alloc(0));
  return {
    dir,
    confPath,
    env: { ...(opts.baseEnv ?? process.env), ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${confPath}` },
    device: name,
    playedPath,
    played,
    async waitPlayed(bytes, timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const got = played();
        if (got.length >= bytes || Date.now() > until) return got;
        await sleep(20);
      }
    },
  };
}
