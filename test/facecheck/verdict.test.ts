import { describe, expect, it } from 'vitest';
import { judge, type FaceCheckThresholds, type FaceMeasurements } from '../../src/facecheck/index.js';

// The sentences an operator reads in failed/faces/NAME.error.json, from measurements alone.

const T: FaceCheckThresholds = { min_face_px: 112, min_sharpness: 40, min_brightness: 50, max_brightness: 195, max_clipped: 0.1 };
const face = (width: number) => ({ x: 10, y: 10, width, height: width, score: 0.9 });
const good: FaceMeasurements = { width: 640, height: 480, faces: [face(200)], sharpness: 300, brightness: 140, clipped_dark: 0, clipped_bright: 0 };

describe('face check verdicts', () => {
  it('accepts one sharp, well exposed face large enough', () => {
    expect(judge(good, T)).toEqual({ ok: true, measurements: good });
  });

  it.each([
    [{ faces: [face(200), face(150)] }, 'several_faces', '2 faces found: crop the image to one person'],
    [{ faces: [face(46)] }, 'face_too_small', 'the face is 46 px wide, at least 112 px is needed: take the picture closer'],
    [{ sharpness: 9 }, 'blurred', 'the face is blurred (sharpness 9, at least 40): hold the camera still'],
    [{ faces: [] }, 'no_face', 'no face found: drop a photo of one person, facing the camera, head and shoulders'],
    [{ brightness: 31, clipped_dark: 0.2 }, 'too_dark', 'the face is too dark (brightness 31 of 255, at least 50; 20 % black, at most 10 %): add light in front of the person'],
    [{ brightness: 236, clipped_bright: 0.68 }, 'over_exposed', 'the face is over-exposed (brightness 236 of 255, at most 195; 68 % white, at most 10 %): use less light or no flash'],
    [{ faces: [], brightness: 19 }, 'too_dark', 'no face found and the image is too dark (brightness 19 of 255, at least 50): add light in front of the person'],
    [{ faces: [], brightness: 202 }, 'over_exposed', 'no face found and the image is over-exposed (brightness 202 of 255, at most 195): use less light or no flash'],
  ] as Array<[Partial<FaceMeasurements>, string, string]>)('%o -> %s', (change, problem, message) => {
    expect(judge({ ...good, ...change }, T)).toMatchObject({ ok: false, problem, message });
  });

  it('names the first problem an operator must fix: the wrong photo, then size, exposure, sharpness', () => {
    expect(judge({ ...good, faces: [face(40), face(40)], brightness: 10, sharpness: 1 }, T).problem).toBe('several_faces');
    expect(judge({ ...good, faces: [face(40)], brightness: 10, sharpness: 1 }, T).problem).toBe('face_too_small');
    expect(judge({ ...good, brightness: 10, sharpness: 1 }, T).problem).toBe('too_dark');
    // A face with a clipped white patch (a lamp behind the head) over the share is over-exposed.
    expect(judge({ ...good, clipped_bright: 0.11 }, T).problem).toBe('over_exposed');
    // A drawing with no face clips by design: only its mean decides between no face and exposure.
    expect(judge({ ...good, faces: [], clipped_dark: 0.3, clipped_bright: 0.65, brightness: 170 }, T).problem).toBe('no_face');
  });
});
