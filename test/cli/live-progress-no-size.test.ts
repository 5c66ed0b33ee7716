import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { plain, runCliInPty } from '../helpers/pty.js';
import { daemonFiles } from '../daemon/daemon-harness.js';

// A terminal that reports 0 rows and 0 columns (a serial console, `script` with no window): a real
// pseudo-terminal set to 0x0 with stty. Live progress is drawn there at 80x24 rather than not at all.

let emulator: Emulator;
let tmp: { dir: string; remove(): void };

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, trainMs: 200 });
  tmp = tmpDirManual('ta-live-nosize-');
});
afterAll(async () => {
  await emulator?.close();
  tmp?.remove();
});

describe('live progress on a terminal that reports 0x0', () => {
  it('faces sync still draws its progress frames, then the result line', { timeout: 60_000 }, async () => {
    emulator.seedFaces(emulator.terminals[0]!.group_id, Array.from({ length: 12 }, (_, i) => ({ name: `n${i}`, image: faceImagePng([20, i * 9, 255 - i * 9]) })));
    emulator.faults.setChaos({ latencyMs: 400 });
    const files = daemonFiles(join(tmp.dir, 'agent'), emulator);
    const r = await runCliInPty(['faces', 'sync', '--config', files.configPath], {}, 'stty size;', { cols: 0, rows: 0 });
    expect(r.code, r.output).toBe(0);
    const text = plain(r.output);
    // The pty really told the command it has no size.
    expect(text).toMatch(/^0 0\r?\n/);
    expect(text).toMatch(/face sync: \d+\/12 images \[[█░]+\]/);
    expect(text.split('face sync: ').length - 1).toBeGreaterThanOrEqual(3);
    expect(text).toContain('face sync done (in this process, no daemon running)');
    expect(text).toContain('12 added');
  });
});
