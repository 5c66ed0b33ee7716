import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLayout, listResults as listResultEntries, resultFileFor, resultPathFor } from '../../src/enroll/index.js';
import { jpeg, listFiles, put, readJson, startRig, waitFor, wav } from './fixtures.js';

// Names that would not survive the trip to the service unchanged, names that differ only by
// Unicode normalization or by case, and file names so long that NAME.error.json would not fit:
// each is settled before any request, and every original in done/ or failed/ has its result
// file beside it.

const posts = (rig: Awaited<ReturnType<typeof startRig>>) => rig.emulator.requests.filter((r) => r.method !== 'GET');

describe('names that cannot survive the trip', () => {
  it('a face, voiceprint or speaker name with a control character is refused before any request; no orphan face', async () => {
    const rig = await startRig();
    const bad = [
      ['faces/new\nline.jpg', 'failed/faces/new\nline.error.json'],
      ['faces/car\rriage.jpg', 'failed/faces/car\rriage.error.json'],
      ['faces/\x1b]0;pwned\x07\x1b[2J.jpg', 'failed/faces/\x1b]0;pwned\x07\x1b[2J.error.json'],
      ['faces/tab\tbed.png', 'failed/faces/tab\tbed.error.json'],
      ['faces/lost\ufffdbyte.jpg', 'failed/faces/lost\ufffdbyte.error.json'],
      ['faces/two\nlines/1.jpg', 'failed/faces/two\nlines/1.error.json'],
      ['voiceprints/v\noice.wav', 'failed/voiceprints/v\noice.error.json'],
      ['speakers/s\npeaker.wav', 'failed/speakers/s\npeaker.error.json'],
      ['knowledge/k\nb.txt', 'failed/knowledge/k\nb.error.json'],
    ] as const;
    await put(rig.dir, 'speakers/s\npeaker.txt', 'hello there');
    for (const [rel] of bad) await put(rig.dir, rel, rel.endsWith('.wav') ? wav(1) : rel.endsWith('.txt') ? 'an entry' : jpeg());
    await waitFor('every error file', () => bad.every(([, r]) => existsSync(join(rig.dir, r))), 10_000);
    for (const [rel, result] of bad) {
      const body = readJson(join(rig.dir, result));
      expect(body.code, rel).toBe('TA_ERR_BAD_NAME');
      // The reason shows the name escaped, never raw control characters.
      expect(body.error, rel).toMatch(/(control character|U\+FFFD).*rename/);
      expect([...String(body.error)].filter((ch) => ch.charCodeAt(0) < 0x20), rel).toEqual([]);
    }
    expect(readJson(join(rig.dir, 'failed/faces/new\nline.error.json')).error).toContain('"new\\nline"');
    expect(posts(rig)).toEqual([]);
    expect(rig.emulator.state.faces()).toEqual([]);
    // Refused once: the knowledge file stays (a mirror) and two more rescans add no failure.
    const failed = rig.enrollment.status().kinds.knowledge.failed;
    await new Promise((r) => setTimeout(r, 2200));
    expect(rig.enrollment.status().kinds.knowledge.failed).toBe(failed);
  });

  it('a file or person folder whose name is not UTF-8 is moved to failed/ under a %XX name with the reason; nothing is sent', async () => {
    const rig = await startRig();
    const raw = (rel: string, ...bytes: number[][]) => Buffer.concat([Buffer.from(join(rig.dir, rel)), ...bytes.map((b) => Buffer.from(b))]);
    writeFileSync(Buffer.concat([raw('faces/caf', [0xe9]), Buffer.from('.jpg')]), jpeg());
    mkdirSync(Buffer.concat([raw('faces/J', [0xf6]), Buffer.from('rg')]));
    writeFileSync(Buffer.concat([raw('faces/J', [0xf6]), Buffer.from('rg/1.jpg')]), jpeg());
    writeFileSync(Buffer.concat([raw('voiceprints/', [0xff, 0xfe]), Buffer.from('.wav')]), wav(1));
    const results = ['failed/faces/caf%E9.error.json', 'failed/faces/J%F6rg.error.json', 'failed/voiceprints/%FF%FE.error.json'];
    await waitFor('the three reasons', () => results.every((r) => existsSync(join(rig.dir, r))), 10_000);
    for (const r of results) expect(readJson(join(rig.dir, r)), r).toMatchObject({ code: 'TA_ERR_BAD_NAME', error: expect.stringMatching(/not valid UTF-8/) });
    expect(existsSync(join(rig.dir, 'failed/faces/caf%E9.jpg'))).toBe(true);
    expect(existsSync(join(rig.dir, 'failed/faces/J%F6rg/1.jpg'))).toBe(true);
    expect(readdirSync(join(rig.dir, 'faces'))).toEqual([]);
    expect(readdirSync(join(rig.dir, 'voiceprints'))).toEqual([]);
    expect(posts(rig)).toEqual([]);
  });

  it('NFD and NFC spellings of one name are one face, sent in NFC; names that differ by case are two faces', async () => {
    const rig = await startRig();
    const nfc = 'Jos\u00e9';
    const nfd = 'Jose\u0301';
    await put(rig.dir, `faces/${nfd}.jpg`, jpeg());
    await put(rig.dir, `faces/${nfc}.png`, jpeg());
    await put(rig.dir, 'faces/Alice.jpg', jpeg());
    await put(rig.dir, 'faces/alice.jpg', jpeg());
    await waitFor('four results', () => listFiles(join(rig.dir, 'done/faces')).filter((f) => f.endsWith('.json')).length === 4);
    const names = rig.emulator.state.faces().map((f) => f.name).sort();
    expect(names).toEqual(['Alice', nfc, 'alice']);
    const actions = [`${nfd}.json`, `${nfc}.json`].map((f) => readJson(join(rig.dir, 'done/faces', f)).action).sort();
    expect(actions).toEqual(['created', 'updated']);
    expect(readJson(join(rig.dir, 'done/faces', `${nfd}.json`)).name).toBe(nfc);
  });

  it('a face on the service whose name is in NFD is found and updated by the NFC name, not duplicated', async () => {
    const rig = await startRig({ start: false });
    const group = rig.emulator.terminals[0]!.group_id;
    rig.emulator.seedFaces(group, [{ name: 'Zo\u0308e', image: jpeg() }]);
    await rig.enrollment.start();
    await put(rig.dir, 'faces/Z\u00f6e.jpg', jpeg());
    await waitFor('done', () => existsSync(join(rig.dir, 'done/faces/Z\u00f6e.json')));
    expect(readJson(join(rig.dir, 'done/faces/Z\u00f6e.json')).action).toBe('updated');
    expect(rig.emulator.state.faces()).toHaveLength(1);
  });

  it('the same content under two names at once is two faces; under one name (NAME.jpg and NAME/1.jpg) it is sent once', async () => {
    const rig = await startRig();
    const image = jpeg();
    await put(rig.dir, 'faces/bob.jpg', image);
    await put(rig.dir, 'faces/robert.jpg', image);
    await put(rig.dir, 'faces/carol.jpg', image);
    await put(rig.dir, 'faces/carol/1.jpg', image);
    await waitFor('four results', () => listFiles(join(rig.dir, 'done/faces')).filter((f) => f.endsWith('.json')).length === 4, 10_000);
    expect(rig.emulator.state.faces().map((f) => f.name).sort()).toEqual(['bob', 'carol', 'robert']);
    const carol = [readJson(join(rig.dir, 'done/faces/carol.json')), readJson(join(rig.dir, 'done/faces/carol/1.json'))];
    expect(carol[0]!.face_id).toBe(carol[1]!.face_id);
    expect(carol.filter((r) => r.duplicate_of_upload !== undefined)).toHaveLength(1);
    expect(posts(rig).filter((r) => r.path.endsWith('/faces'))).toHaveLength(3);
  });
});

describe('result files for names near NAME_MAX (255 bytes)', () => {
  it('resultFileFor fits every name in 255 bytes, keeps short names as they were, and tells long names apart', () => {
    expect(resultFileFor('faces', 'failed', 'alice.jpg')).toBe('alice.error.json');
    expect(resultFileFor('faces', 'done', 'alice.jpg')).toBe('alice.json');
    expect(resultFileFor('knowledge', 'done', 'faq.v2')).toBe('faq.v2.json');
    const a = `${'a'.repeat(251)}.png`;
    const b = `${'a'.repeat(250)}b.png`;
    for (const name of [a, b, `${'é'.repeat(125)}x.jpg`]) {
      for (const state of ['done', 'failed'] as const) {
        const r = resultFileFor('faces', state, name);
        expect(Buffer.byteLength(r)).toBeLessThanOrEqual(255);
        expect(r).toMatch(state === 'done' ? /~[0-9a-f]{12}\.json$/ : /~[0-9a-f]{12}\.error\.json$/);
        expect(r.includes('\ufffd')).toBe(false);
      }
    }
    expect(resultFileFor('faces', 'failed', a)).not.toBe(resultFileFor('faces', 'failed', b));
  });

  it('a 250-byte file name in failed/ and in done/ has its result beside it, found by resultPathFor and listResults', async () => {
    const rig = await startRig();
    const badName = `${'a'.repeat(246)}.jpg`;
    // 255 bytes but 89 characters: the emulator, like many services, limits names in characters.
    const goodName = `${'\u6f22'.repeat(83)}gg.jpg`;
    expect(Buffer.byteLength(badName)).toBe(250);
    expect(Buffer.byteLength(goodName)).toBe(255);
    await put(rig.dir, `faces/${badName}`, 'not an image at all');
    await put(rig.dir, `faces/${goodName}`, jpeg());
    const layout = createLayout(rig.dir, rig.config.state_dir);
    const failedResult = resultPathFor(layout, 'faces', 'failed', badName);
    const doneResult = resultPathFor(layout, 'faces', 'done', goodName);
    await waitFor('both result files', () => existsSync(failedResult) && existsSync(doneResult));
    expect(existsSync(join(rig.dir, 'failed/faces', badName))).toBe(true);
    expect(readJson(failedResult)).toMatchObject({ code: 'TA_ERR_BAD_IMAGE', file: badName });
    expect(readJson(doneResult)).toMatchObject({ action: 'created', file: goodName });
    const failed = await listResultEntries(layout, 'faces', 'failed');
    expect(failed).toEqual([expect.objectContaining({ rel: badName, resultPath: failedResult, result: expect.objectContaining({ code: 'TA_ERR_BAD_IMAGE' }) })]);

    // The same long name failing again: the original gets a `.2` that must still fit.
    await put(rig.dir, `faces/${badName}`, 'still not an image');
    const again = await waitFor('a second failure', async () => {
      const entries = await listResultEntries(layout, 'faces', 'failed');
      return entries.length === 2 && entries.every((e) => e.result) && entries;
    });
    expect(again).toHaveLength(2);
    for (const e of again) {
      expect(Buffer.byteLength(e.rel)).toBeLessThanOrEqual(255);
      expect(e.result).toMatchObject({ code: 'TA_ERR_BAD_IMAGE', file: e.rel });
    }
  });
});
