import { existsSync, readFileSync } from 'node:fs';
import { symlink } from 'node:fs/promises';
import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '../helpers/tmp.js';
import { jpeg, listFiles, put, readJson, startRig, waitFor, wav } from './fixtures.js';

// Every input the agent can refuse itself lands in failed/<kind>/ with NAME.error.json saying why,
// and nothing is sent for it.

function placeholderWav(): Buffer {
  const w = wav(1);
  w.writeUInt32LE(0xffffffff, 4);
  w.writeUInt32LE(0xffffffff, 40);
  return w;
}

describe('refused inputs', () => {
  it('each bad file goes to failed/ with {error, code, status, attempts, at}', async () => {
    const rig = await startRig({ config: { enroll: { max_file_size: 64 * 1024 } } });
    const outside = join(tmpDir('ta-outside-'), 'secret.jpg');
    await put(join(outside, '..'), 'secret.jpg', jpeg());
    const huge = Buffer.concat([jpeg(), Buffer.alloc(70 * 1024)]);
    const cases: [string, Buffer | string, string, string][] = [
      ['faces/text.jpg', 'this is not an image', 'failed/faces/text.error.json', 'TA_ERR_BAD_IMAGE'],
      ['faces/empty.jpg', '', 'failed/faces/empty.error.json', 'TA_ERR_EMPTY_FILE'],
      ['faces/huge.jpg', huge, 'failed/faces/huge.error.json', 'TA_ERR_TOO_LARGE'],
      [`voiceprints/${'n'.repeat(30)}éé.wav`, wav(1), `failed/voiceprints/${'n'.repeat(30)}éé.error.json`, 'TA_ERR_NAME_TOO_LONG'],
      ['voiceprints/cut.wav', wav(1).subarray(0, 1000), 'failed/voiceprints/cut.error.json', 'TA_ERR_BAD_WAV'],
      ['voiceprints/stream.wav', placeholderWav(), 'failed/voiceprints/stream.error.json', 'TA_ERR_BAD_WAV'],
      ['voiceprints/riff.wav', 'RIFF....AVI LIST', 'failed/voiceprints/riff.error.json', 'TA_ERR_BAD_WAV'],
      ['voiceprints/odd.pcm', Buffer.alloc(16001, 1), 'failed/voiceprints/odd.error.json', 'TA_ERR_BAD_PCM'],
      ['speakers/mute.wav', wav(1), 'failed/speakers/mute.error.json', 'TA_ERR_SPEAKER_TEXT_MISSING'],
      ['knowledge/blank.txt', '  \n', 'failed/knowledge/blank.error.json', 'TA_ERR_EMPTY_TEXT'],
    ];
    await put(rig.dir, 'speakers/quiet.txt', '');
    await put(rig.dir, 'speakers/quiet.wav', wav(1));
    for (const [rel, data] of cases) await put(rig.dir, rel, data);
    await symlink(outside, join(rig.dir, 'faces/linked.jpg'));

    const all = [...cases.map(([, , result, code]) => [result, code] as const),
      ['failed/speakers/quiet.error.json', 'TA_ERR_EMPTY_TEXT'] as const,
      ['failed/faces/linked.error.json', 'TA_ERR_SYMLINK'] as const];
    await waitFor('every error file', () => all.every(([result]) => existsSync(join(rig.dir, result))), 10_000);
    for (const [result, code] of all) {
      const body = readJson(join(rig.dir, result));
      expect(Object.keys(body).sort(), result).toEqual(['at', 'attempts', 'code', 'error', 'file', 'status']);
      expect(body, result).toMatchObject({ code, status: null, attempts: 0 });
      expect(body.error, result).toMatch(/\S{10,}/);
    }
    // Originals moved beside their reasons (knowledge stays: it is a mirror), untouched.
    expect(readFileSync(join(rig.dir, 'failed/faces/huge.jpg')).equals(huge)).toBe(true);
    expect(listFiles(join(rig.dir, 'faces'))).toEqual([]);
    expect(listFiles(join(rig.dir, 'speakers'))).toEqual([]);
    expect(existsSync(join(rig.dir, 'failed/speakers/quiet.txt'))).toBe(true);
    expect(existsSync(join(rig.dir, 'knowledge/blank.txt'))).toBe(true);
    // The link itself moved, never followed: it still names the file outside, untouched.
    expect(readJson(join(rig.dir, 'failed/faces/linked.error.json')).error).toMatch(/faces\/linked\.jpg is a symbolic link; the agent follows no link/);
    expect(readlinkSync(join(rig.dir, 'failed/faces/linked.jpg'))).toBe(outside);
    expect(rig.emulator.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    const st = rig.enrollment.status();
    expect(st.kinds.faces.failed).toBe(4);
    expect(st.recent_failures.length).toBe(10);
  });

  it('two refused files with one stem (alice.jpg, alice.png) dropped together each keep their own reason', async () => {
    const rig = await startRig();
    await put(rig.dir, 'faces/alice.jpg', '');
    await put(rig.dir, 'faces/alice.png', 'not a picture');
    const reasons = ['alice.error.json', 'alice.2.error.json'].map((f) => join(rig.dir, 'failed/faces', f));
    await waitFor('two error files', () => reasons.every((f) => existsSync(f)));
    // Whichever was refused first keeps its name; the other is renamed with its reason beside it.
    const told = reasons.map((f) => readJson(f)).sort((a, b) => String(a.code).localeCompare(String(b.code)));
    expect(told.map((r) => r.code)).toEqual(['TA_ERR_BAD_IMAGE', 'TA_ERR_EMPTY_FILE']);
    const [bad, empty] = told;
    expect(bad!.error).toContain('faces/alice.png');
    expect(empty!.error).toContain('faces/alice.jpg');
    expect(readFileSync(join(rig.dir, 'failed/faces', String(bad!.file)), 'utf8')).toBe('not a picture');
    expect(readFileSync(join(rig.dir, 'failed/faces', String(empty!.file)), 'utf8')).toBe('');
    expect([bad!.file, empty!.file].sort()).toEqual(String(bad!.file) === 'alice.png' ? ['alice.2.jpg', 'alice.png'] : ['alice.2.png', 'alice.jpg']);
  });

  it('a 4xx from the service fails the file for good with the server message; no retry', async () => {
    const rig = await startRig();
    await put(rig.dir, 'voiceprints/short.wav', wav(0.2));
    await waitFor('error file', () => existsSync(join(rig.dir, 'failed/voiceprints/short.error.json')));
    const body = readJson(join(rig.dir, 'failed/voiceprints/short.error.json'));
    expect(body).toMatchObject({ status: 400, attempts: 1, code: 'TA_ERR_BAD_REQUEST' });
    expect(body.error).toContain('at least half a second');
    expect(rig.emulator.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('leaves temp names and dotfiles alone, and takes a .part file once renamed', async () => {
    const rig = await startRig();
    await put(rig.dir, 'faces/kate.jpg.part', jpeg());
    await put(rig.dir, 'faces/.hidden.jpg', jpeg());
    for (const suffix of ['.tmp', '.crdownload', '.swp', '~']) await put(rig.dir, `faces/x${suffix}`, jpeg());
    await new Promise((r) => setTimeout(r, 1500));
    expect(rig.emulator.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    const { rename } = await import('node:fs/promises');
    await rename(join(rig.dir, 'faces/kate.jpg.part'), join(rig.dir, 'faces/kate.jpg'));
    await waitFor('kate done', () => existsSync(join(rig.dir, 'done/faces/kate.json')));
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['kate']);
    expect(listFiles(join(rig.dir, 'faces')).sort()).toEqual(['.hidden.jpg', 'x.crdownload', 'x.swp', 'x.tmp', 'x~']);
  });
});
