import { describe, expect, it } from 'vitest';
import { faceImage, testFaceChecker } from '../helpers/face-checker.js';

// The face check's worker thread as the daemon sees it: started at the first image, ended after a
// quiet while, and a stuck or crashed worker failing its image (not the daemon) with a clear error.

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);

describe('face checker', () => {
  it('starts its worker at the first image only, ends it when idle, and starts it again for the next', async () => {
    const checker = testFaceChecker({ idleMs: 300 });
    expect(checker.loaded()).toBe(false);
    expect((await checker.check(faceImage('ok-hopper.jpg'))).faces).toHaveLength(1);
    expect(checker.loaded()).toBe(true);
    await new Promise((r) => setTimeout(r, 800));
    expect(checker.loaded()).toBe(false);
    expect((await checker.check(faceImage('group-2-hopper-twice.jpg'))).faces).toHaveLength(2);
    expect(checker.starts()).toBe(2);
  });

  it('fails an image whose check gives no answer in time, and one whose worker crashed, with TA_ERR_FACE_CHECK_UNAVAILABLE', async () => {
    const stuck = testFaceChecker({ workerUrl: fixture('silent-worker.mjs'), timeoutMs: 1000 });
    await expect(stuck.check(faceImage('ok-hopper.jpg'))).rejects.toMatchObject({ code: 'TA_ERR_FACE_CHECK_UNAVAILABLE', message: 'the face check gave no answer in 1 s' });
    expect(stuck.loaded()).toBe(false);
    const crashing = testFaceChecker({ workerUrl: fixture('crashing-worker.mjs') });
    await expect(crashing.check(faceImage('ok-hopper.jpg'))).rejects.toMatchObject({ code: 'TA_ERR_FACE_CHECK_UNAVAILABLE', message: "the face check's thread failed: the runtime fell over" });
  });

  it('rejects bytes that are no image as undecodable (TA_ERR_BAD_INPUT), and keeps serving', async () => {
    const checker = testFaceChecker();
    await expect(checker.check(Buffer.from('not an image at all'))).rejects.toMatchObject({ code: 'TA_ERR_BAD_INPUT', message: expect.stringMatching(/unsupported image format/) });
    expect((await checker.check(faceImage('none-cat.jpg'))).faces).toEqual([]);
  });

  it('gives each of many images sent at once its own answer (the worker answers a burst several at a time)', async () => {
    const checker = testFaceChecker();
    const images = ['ok-hopper.jpg', 'group-2-hopper-twice.jpg', 'none-cat.jpg', 'ok-astronaut.jpg', 'group-2-hopper-twice.jpg', 'none-cat.jpg', 'ok-hopper.jpg'];
    const sent = [...images.map((f) => checker.check(faceImage(f))), checker.check(Buffer.from('not an image at all'))];
    const got = await Promise.allSettled(sent);
    expect(got.slice(0, -1).map((r) => (r.status === 'fulfilled' ? r.value.faces.length : r.reason))).toEqual([1, 2, 0, 1, 2, 0, 1]);
    expect(got.at(-1)).toMatchObject({ status: 'rejected', reason: { code: 'TA_ERR_BAD_INPUT' } });
    expect(checker.starts()).toBe(1);
  });
});
