import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { saveSynthesizedWav } from '../../src/audio/wav-file-writer.js';
import { OutputFileError } from '../../src/errors.js';
import { startRig } from '../client/fixtures.js';
import { tmpDir } from '../helpers/tmp.js';

// `say --out` and the TTS cache write a WAV while it streams in. When the file side fails half-way
// (the folder removed, a full disk), the error must say so, not blame the network.

describe('saveSynthesizedWav', () => {
  it('a folder removed while the WAV streams in is an OutputFileError naming the file, and nothing is left', async () => {
    const rig = await startRig();
    rig.emu.faults.setChaos({ slowBodyBytesPerSec: 16_000 });
    const dir = join(tmpDir('ta-wavout-'), 'out');
    mkdirSync(dir);
    const path = join(dir, 'phrase.wav');
    const saving = saveSynthesizedWav(rig.client, { text: 'a phrase long enough to stream for a while' }, path, { maxAudioMs: 600_000, maxBytes: 64 * 1024 * 1024 }).catch((e: unknown) => e);
    await sleep(400);
    rmSync(dir, { recursive: true, force: true });
    const err = await saving;
    expect(err).toBeInstanceOf(OutputFileError);
    expect(err).toMatchObject({ code: 'TA_ERR_OUTPUT', exitCode: 1, details: { path, errno: 'ENOENT' } });
    expect((err as Error).message).toMatch(new RegExp(`^cannot write ${path}: `));
    expect(existsSync(path)).toBe(false);
  });
});
