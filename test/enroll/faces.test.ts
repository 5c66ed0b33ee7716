import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jpeg, png, put, readJson, startRig, waitFor } from './fixtures.js';

describe('faces/ inbox', () => {
  it('creates a dropped face, writes done/faces/NAME.json with its face_id and tells the face cache', async () => {
    const rig = await startRig();
    const image = jpeg();
    await put(rig.dir, 'faces/alice.jpg', image);
    const resultPath = join(rig.dir, 'done/faces/alice.json');
    await waitFor('done/faces/alice.json', () => existsSync(resultPath));
    const faces = rig.emulator.state.faces();
    expect(faces.map((f) => f.name)).toEqual(['alice']);
    const result = readJson(resultPath);
    expect(result).toMatchObject({ kind: 'faces', name: 'alice', face_id: faces[0]!.face_id, action: 'created' });
    expect(existsSync(join(rig.dir, 'done/faces/alice.jpg'))).toBe(true);
    expect(existsSync(join(rig.dir, 'faces/alice.jpg'))).toBe(false);
    expect(rig.emulator.state.faceImage(faces[0]!.face_id)?.equals(image)).toBe(true);
    expect(rig.changed).toEqual([faces[0]!.face_id]);
    // The face cache gets the bytes that were sent, so it need not download them back.
    expect(rig.seeds).toHaveLength(1);
    expect(rig.seeds[0]!.face).toMatchObject({ face_id: faces[0]!.face_id, name: 'alice', group_id: faces[0]!.group_id });
    expect(rig.seeds[0]!.bytes.equals(image)).toBe(true);
    const st = rig.enrollment.status();
    expect(st.kinds.faces).toMatchObject({ queued: 0, in_flight: 0, done: 1, failed: 0, oldest_waiting_ms: null });
    const metrics = await rig.metrics.metrics();
    expect(metrics).toContain('terminal_agent_enroll_files_total{kind="faces",result="done"} 1');
    expect(metrics).toContain('terminal_agent_enroll_outbox{kind="faces",state="done"} 1');
  });

  it('takes NAME/any.jpg as face NAME, and PNG files', async () => {
    const rig = await startRig();
    await put(rig.dir, 'faces/bob/photo-1.png', png());
    await waitFor('done json', () => existsSync(join(rig.dir, 'done/faces/bob/photo-1.json')));
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['bob']);
    expect(existsSync(join(rig.dir, 'done/faces/bob/photo-1.png'))).toBe(true);
  });

  it('updates an existing face by default (PUT), creates or skips as on_existing_face says', async () => {
    const rig = await startRig();
    const [carol] = rig.emulator.seedFaces(rig.emulator.terminals[0]!.group_id, [{ name: 'carol', image: jpeg() }]);
    const newImage = jpeg();
    await put(rig.dir, 'faces/carol.jpg', newImage);
    await waitFor('carol done', () => existsSync(join(rig.dir, 'done/faces/carol.json')));
    expect(readJson(join(rig.dir, 'done/faces/carol.json'))).toMatchObject({ face_id: carol!.face_id, action: 'updated' });
    expect(rig.emulator.state.faces()).toHaveLength(1);
    expect(rig.emulator.state.faceImage(carol!.face_id)?.equals(newImage)).toBe(true);
    expect(rig.emulator.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
    expect(rig.seeds.map((x) => [x.face.face_id, x.face.name, x.bytes.equals(newImage)])).toEqual([[carol!.face_id, 'carol', true]]);
  });

  it('on_existing_face: create makes a second face; skip leaves the existing one alone', async () => {
    const rig = await startRig({ config: { enroll: { on_existing_face: 'create' } } });
    const group = rig.emulator.terminals[0]!.group_id;
    rig.emulator.seedFaces(group, [{ name: 'dave', image: jpeg() }]);
    await put(rig.dir, 'faces/dave.jpg', jpeg());
    await waitFor('dave done', () => existsSync(join(rig.dir, 'done/faces/dave.json')));
    const daves = rig.emulator.state.faces().filter((f) => f.name === 'dave');
    expect(daves).toHaveLength(2);
    // The new face is the one reported, not the one that was there before.
    expect(readJson(join(rig.dir, 'done/faces/dave.json')).face_id).toBe(daves.sort((a, b) => b.id - a.id)[0]!.face_id);

    const skip = await startRig({ config: { enroll: { on_existing_face: 'skip' } } });
    const [erin] = skip.emulator.seedFaces(skip.emulator.terminals[0]!.group_id, [{ name: 'erin', image: jpeg() }]);
    await put(skip.dir, 'faces/erin.jpg', jpeg());
    await waitFor('erin done', () => existsSync(join(skip.dir, 'done/faces/erin.json')));
    expect(readJson(join(skip.dir, 'done/faces/erin.json'))).toMatchObject({ face_id: erin!.face_id, action: 'skipped' });
    expect(skip.emulator.requests.filter((r) => r.method !== 'GET')).toHaveLength(0);
  });

  it('the same image dropped again is not uploaded again: done/ gets the earlier result', async () => {
    const rig = await startRig();
    const image = jpeg();
    await put(rig.dir, 'faces/frank.jpg', image);
    await waitFor('first', () => existsSync(join(rig.dir, 'done/faces/frank.json')));
    await put(rig.dir, 'faces/frank.jpg', image);
    await waitFor('second', () => existsSync(join(rig.dir, 'done/faces/frank.2.json')));
    const first = readJson(join(rig.dir, 'done/faces/frank.json'));
    const second = readJson(join(rig.dir, 'done/faces/frank.2.json'));
    expect(second.face_id).toBe(first.face_id);
    expect(second.duplicate_of_upload).toBeTypeOf('number');
    expect(existsSync(join(rig.dir, 'done/faces/frank.2.jpg'))).toBe(true);
    expect(rig.emulator.requests.filter((r) => r.method === 'POST' || r.method === 'PUT')).toHaveLength(1);
  });

  it('folders it creates under enroll.dir take enroll.dir\'s permissions (2770 from install.sh), whatever the umask; enroll.dir, done/ and failed/ get the sticky bit', async () => {
    const rig = await startRig({ start: false });
    await mkdir(rig.dir, { recursive: true });
    await chmod(rig.dir, 0o2770);
    // The unit's UMask=0027 would make new folders 2750: results an operator can read but not remove.
    const umask = process.umask(0o027);
    try {
      await rig.enrollment.start();
      await put(rig.dir, 'faces/gina/photo-1.jpg', jpeg());
      await waitFor('gina done', () => existsSync(join(rig.dir, 'done/faces/gina/photo-1.json')));
    } finally {
      process.umask(umask);
    }
    const mode = (rel: string) => (statSync(join(rig.dir, rel)).mode & 0o7777).toString(8);
    for (const rel of ['faces', 'done/faces', 'done/faces/gina', 'failed/voiceprints', 'knowledge']) expect(mode(rel), rel).toBe('2770');
    // Operators cannot rename or replace the folders the daemon works in (confined-dirs.ts).
    for (const rel of ['.', 'done', 'failed']) expect(mode(rel), rel).toBe('3770');
  });
});
