import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capturePcm } from '../../src/voiceprint/capture.js';
import { RecorderError } from '../../src/errors.js';
import { alsaCaptureDevice, makeCaptureInputs, type CaptureInputs } from '../helpers/alsa-capture.js';
import { tmpDirManual } from '../helpers/tmp.js';

// Real arecord and sox reading ALSA's `file` plugin: no sound card, no mock.

let work: { dir: string; remove(): void };
let inputs: CaptureInputs;

beforeAll(() => {
  work = tmpDirManual('ta-capture-');
  inputs = makeCaptureInputs(work.dir);
});
afterAll(() => work.remove());

describe('capturePcm', () => {
  it.each(['arecord', 'sox'] as const)('records exactly the samples asked for with %s, byte for byte what the device delivered', async (recorder) => {
    const mic = alsaCaptureDevice(work.dir, inputs.speech, `mic_${recorder}`);
    const { pcm, requestedSamples } = await capturePcm({ recorder, device: mic.device, sampleRate: 16000, seconds: 2.5, env: mic.env });
    expect(requestedSamples).toBe(40000);
    expect(pcm.length).toBe(80000);
    expect(pcm.equals(readFileSync(inputs.speech).subarray(0, 80000))).toBe(true);
  });

  it('names the device and how to check it when the device does not exist', async () => {
    const mic = alsaCaptureDevice(work.dir, inputs.speech);
    const err = await capturePcm({ recorder: 'arecord', device: 'no_such_mic', sampleRate: 16000, seconds: 1, env: mic.env }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecorderError);
    expect((err as RecorderError).message).toMatch(/device 'no_such_mic' cannot be opened/);
    expect((err as RecorderError).message).toMatch(/arecord -L/);
    expect((err as RecorderError).details.reason).toBe('device-missing');
  });

  it('says which package to install when the recorder binary is missing, and does not crash the process', async () => {
    const mic = alsaCaptureDevice(work.dir, inputs.speech);
    const env = { ...mic.env, PATH: join(work.dir, 'empty-bin') };
    for (const recorder of ['arecord', 'sox'] as const) {
      const err = await capturePcm({ recorder, device: mic.device, sampleRate: 16000, seconds: 1, env }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RecorderError);
      expect((err as RecorderError).message).toContain(recorder === 'arecord' ? 'apt-get install alsa-utils' : 'apt-get install sox');
      expect((err as RecorderError).details.reason).toBe('not-installed');
    }
  });

  it('reports a recorder that dies half-way with how far it got', async () => {
    // A stand-in for arecord (a real device failing mid-recording cannot be produced here): it
    // writes one second of samples, complains on stderr like arecord does, and exits 1.
    const bin = join(work.dir, 'dying-bin');
    mkdirSync(bin, { recursive: true });
    const fake = join(bin, 'arecord');
    writeFileSync(fake, `#!/bin/sh\nhead -c 32000 ${JSON.stringify(inputs.speech)}\necho "arecord: pcm_read:2221: read error: Input/output error" >&2\nexit 1\n`);
    chmodSync(fake, 0o755);
    const err = await capturePcm({ recorder: 'arecord', device: 'usbmic', sampleRate: 16000, seconds: 3, env: { PATH: `${bin}:/usr/bin:/bin` } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecorderError);
    const msg = (err as RecorderError).message;
    expect(msg).toMatch(/exited with code 1 after 1\.0 s of the 3\.0 s recording from device 'usbmic'/);
    expect(msg).toContain('read error: Input/output error');
    expect((err as RecorderError).details.reason).toBe('died');
  });

  it('reports a busy device by name', async () => {
    // Stand-in: a busy hw: device needs real hardware; this prints what arecord prints then.
    const bin = join(work.dir, 'busy-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'arecord'), '#!/bin/sh\necho "arecord: main:831: audio open error: Device or resource busy" >&2\nexit 1\n');
    chmodSync(join(bin, 'arecord'), 0o755);
    const err = await capturePcm({ recorder: 'arecord', device: 'hw:1,0', sampleRate: 16000, seconds: 1, env: { PATH: `${bin}:/usr/bin:/bin` } }).catch((e: unknown) => e);
    expect((err as RecorderError).message).toMatch(/microphone device 'hw:1,0' is busy/);
    expect((err as RecorderError).details.reason).toBe('device-busy');
  });
});
