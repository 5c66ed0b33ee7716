import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jpeg, put, readJson, startRig, waitFor } from './fixtures.js';
import { faceImage, testFaceChecker } from '../helpers/face-checker.js';

// enroll/faces/ with the face check on: real photos of the labelled set (test/fixtures/faces/)
// through the real detector in its worker thread, against the emulator.

const done = (dir: string, name: string) => join(dir, 'done/faces', `${name}.json`);
const failed = (dir: string, name: string) => join(dir, 'failed/faces', `${name}.error.json`);

describe('face check in enroll/faces/', () => {
  it('uploads a good portrait with its measurements in done/, refuses a group photo into failed/ with the sentence', async () => {
    const checker = testFaceChecker();
    const rig = await startRig({ config: { enroll: { face_check: { mode: 'refuse' } } }, faceChecker: checker });
    // The idle daemon has not loaded the model.
    expect(checker.loaded()).toBe(false);
    await put(rig.dir, 'faces/grace.jpg', faceImage('ok-hopper.jpg'));
    await put(rig.dir, 'faces/team.jpg', faceImage('group-3.jpg'));
    await waitFor('both results', () => existsSync(done(rig.dir, 'grace')) && existsSync(failed(rig.dir, 'team')));
    expect(checker.starts()).toBe(1);

    const ok = readJson(done(rig.dir, 'grace'));
    expect(ok).toMatchObject({ name: 'grace', action: 'created', face_check: { verdict: 'accepted', width: 512, height: 600 } });
    const faceCheck = ok.face_check as { faces: Array<{ width: number }>; sharpness: number; brightness: number };
    expect(faceCheck.faces).toHaveLength(1);
    expect(faceCheck.faces[0]!.width).toBeGreaterThan(150);
    expect(faceCheck.sharpness).toBeGreaterThan(40);

    const refused = readJson(failed(rig.dir, 'team'));
    expect(refused).toMatchObject({ code: 'TA_ERR_FACE_CHECK', error: 'faces/team.jpg: 3 faces found: crop the image to one person', face_check: { verdict: 'refused', problem: 'several_faces' } });
    expect((refused.face_check as { faces: unknown[] }).faces).toHaveLength(3);
    expect(existsSync(join(rig.dir, 'failed/faces/team.jpg'))).toBe(true);
    // Only the portrait reached the group.
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['grace']);
  });

  it.each([
    ['blurred-hopper-s7.jpg', 'the face is blurred (sharpness 7, at least 40): hold the camera still'],
    ['small-hopper-x0.3.jpg', /^the face is 5\d px wide, at least 80 px is needed: take the picture closer$/],
    ['none-cat.jpg', 'no face found: drop a photo of one person, facing the camera, head and shoulders'],
    ['dark-hopper.jpg', /^the face is too dark \(brightness 29 of 255, at least 50; \d+ % black, at most 10 %\): add light in front of the person$/],
  ])('refuses %s: %s', async (file, sentence) => {
    const rig = await startRig({ config: { enroll: { face_check: { mode: 'refuse' } } }, faceChecker: testFaceChecker() });
    await put(rig.dir, 'faces/someone.jpg', faceImage(file));
    await waitFor('refusal', () => existsSync(failed(rig.dir, 'someone')));
    const check = readJson(failed(rig.dir, 'someone')).face_check as { message: string };
    expect(check.message).toMatch(sentence);
    expect(rig.emulator.state.faces()).toEqual([]);
  });

  it('warn: uploads a blurred photo and records the warning in done/', async () => {
    const rig = await startRig({ config: { enroll: { face_check: { mode: 'warn' } } }, faceChecker: testFaceChecker() });
    await put(rig.dir, 'faces/blur.jpg', faceImage('blurred-astronaut-s5.jpg'));
    await waitFor('done', () => existsSync(done(rig.dir, 'blur')));
    expect(readJson(done(rig.dir, 'blur'))).toMatchObject({ action: 'created', face_check: { verdict: 'warned', problem: 'blurred', message: expect.stringMatching(/^the face is blurred/) } });
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['blur']);
  });

  it('refuses an image that only looks like a JPEG, and says the check cannot run when its model is missing', async () => {
    const rig = await startRig({ config: { enroll: { face_check: { mode: 'refuse' } } }, faceChecker: testFaceChecker() });
    await put(rig.dir, 'faces/fake.jpg', jpeg());
    await waitFor('refusal', () => existsSync(failed(rig.dir, 'fake')));
    expect(readJson(failed(rig.dir, 'fake'))).toMatchObject({ code: 'TA_ERR_BAD_IMAGE', error: expect.stringMatching(/^faces\/fake\.jpg could not be decoded as an image \(.+\): export it again as JPEG or PNG and drop it again$/) });

    const broken = await startRig({ config: { enroll: { face_check: { mode: 'refuse' } } }, faceChecker: testFaceChecker({ modelDir: '/nonexistent/face-detector' }) });
    await put(broken.dir, 'faces/ada.jpg', faceImage('ok-astronaut.jpg'));
    await waitFor('refusal', () => existsSync(failed(broken.dir, 'ada')));
    expect(readJson(failed(broken.dir, 'ada'))).toMatchObject({
      code: 'TA_ERR_FACE_CHECK_UNAVAILABLE',
      error: expect.stringMatching(/^the face check could not run on faces\/ada\.jpg \(the face detector did not load from \/nonexistent\/face-detector: .*ENOENT.*\): run 'terminal-agent doctor', or set enroll\.face_check\.mode: off to upload without the check$/),
    });
    expect(broken.emulator.state.faces()).toEqual([]);
  });

  it('off: uploads without looking (the stand-in images of the other tests)', async () => {
    const rig = await startRig({ config: { enroll: { face_check: { mode: 'off' } } } });
    await put(rig.dir, 'faces/team.jpg', faceImage('group-4.jpg'));
    await waitFor('done', () => existsSync(done(rig.dir, 'team')));
    expect(readJson(done(rig.dir, 'team')).face_check).toBeUndefined();
  });
});
