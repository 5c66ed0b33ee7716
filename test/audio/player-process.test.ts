import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AudioDeviceError } from '../../src/errors.js';
import { deviceError, spawnPlayerProcess, type PlayerProcess } from '../../src/audio/player-process.js';
import { silentLogger } from '../../src/log/logger.js';
import { tmpDir } from '../helpers/tmp.js';

// One player process, real child processes standing in for player-child.js: the stand-ins say
// what a player says over IPC and on stderr, and die the ways `speaker` dies without a sound card
// (SIGABRT after ALSA's complaint). What the operator reads is the device error.

function script(body: string): string {
  const path = join(tmpDir('ta-player-proc-'), 'child.cjs');
  writeFileSync(path, body);
  return path;
}

function start(body: string) {
  const exits: Array<{ code: number | null; signal: NodeJS.Signals | null; dead: boolean }> = [];
  const child = spawnPlayerProcess({
    script: script(body), device: 'plughw:7,0', log: silentLogger(),
    onExit: (c: PlayerProcess, code, signal) => exits.push({ code, signal, dead: c.dead }),
  });
  return { child, exits };
}

describe('a player process', () => {
  it('is ready when it says so over IPC, and its end is reported once', async () => {
    const { child, exits } = start("process.send({ type: 'ready' }); process.on('message', () => process.exit(0));");
    await child.ready;
    child.proc.send({ type: 'play' });
    await child.exited;
    expect(exits).toEqual([{ code: 0, signal: null, dead: true }]);
  });

  it('that aborts while loading speaker: ready fails with one short line naming the device and the fix, ALSA\'s words in the details', async () => {
    const { child, exits } = start("process.stderr.write('ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM plughw:7,0\\n'); setTimeout(() => process.abort(), 50);");
    const err = await child.ready.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(AudioDeviceError);
    expect((err as Error).message).toBe(
      'cannot play on ALSA device "plughw:7,0" (audio.output_device): ALSA cannot open it (no sound card, or the device is missing);'
      + " fix: connect the speaker, or set audio.output_device to a device that 'aplay -L' lists",
    );
    expect((err as AudioDeviceError).details).toMatchObject({
      device: 'plughw:7,0', signal: 'SIGABRT', step: 'the player process ended while starting', how: 'killed by SIGABRT',
      alsa: ['ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM plughw:7,0'],
    });
    expect(exits).toEqual([{ code: null, signal: 'SIGABRT', dead: true }]);
  });

  it('that reports an error of its own: the error names it, and a hang is told as the supervisor saw it', async () => {
    const { child } = start("process.send({ type: 'error', message: 'speaker: cannot load the native module', code: 'ERR_DLOPEN_FAILED' }); setTimeout(() => {}, 10_000);");
    const err = await child.ready.then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toMatch(/^cannot play on ALSA device "plughw:7,0" \(audio.output_device\): the speaker module could not be loaded: speaker: cannot load the native module; fix: /);
    const hung = deviceError('plughw:7,0', child, 'the player process stopped responding', { how: 'nothing played for 9.0 s', details: { reason: 'hung' } });
    expect(hung.message).toMatch(/: the player process stopped responding: nothing played for 9\.0 s; fix: /);
    expect(hung.details).toMatchObject({ reason: 'hung', device: 'plughw:7,0' });
    child.proc.kill('SIGKILL');
    await child.exited;
  });

  it('whose program cannot be started at all: ready fails, and the end is still reported', async () => {
    const child = spawnPlayerProcess({ script: '/nonexistent/player-child.js', device: 'default', log: silentLogger(), onExit: () => undefined });
    const err = await child.ready.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(AudioDeviceError);
    expect((err as Error).message).toMatch(/^cannot play on ALSA device "default" \(audio.output_device\): the player process ended while starting: exit code 1; fix: /);
    expect((err as AudioDeviceError).details.alsa).toEqual(expect.arrayContaining([expect.stringContaining("Error: Cannot find module '/nonexistent/player-child.js'")]));
    expect(child.dead).toBe(true);
  });
});
