import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { consoleStackForFile, logIn, screenshot } from './browser-harness.js';
import { faceImage } from '../helpers/face-checker.js';

// The Enrollment page in a real browser (Debian's Chromium) against a real daemon with the face
// check on: a portrait dropped into enroll/faces/ is shown enrolled with its measurements and one
// box on its preview, a group photo shown refused with the sentence and a box per face.

const s = consoleStackForFile({ faceCheck: 'refuse' });

describe('face check on the console', { timeout: 60_000 }, () => {
  test('the Enrollment page shows the verdict, the measurements and the face boxes', async () => {
    const { stack, page, errors } = s;
    await logIn(page);
    await page.locator('[data-ready=overview]').waitFor({ timeout: 10_000 });
    writeFileSync(join(stack.files.enrollDir, 'faces', 'Grace Hopper.jpg'), faceImage('ok-hopper.jpg'));
    writeFileSync(join(stack.files.enrollDir, 'faces', 'team.jpg'), faceImage('group-3.jpg'));
    await page.goto('/#/enrollment');
    await page.locator('[data-ready=enrollment]').waitFor();

    const done = page.locator('#lane-done li[data-name="Grace Hopper.jpg"]');
    await done.waitFor({ timeout: 30_000 });
    await expect.poll(() => done.locator('[data-testid=face-check]').innerText()).toMatch(/^face check accepted · 1 face, \d+ px · sharpness \d+ · brightness \d+$/);
    expect(await done.locator('[data-testid=face-boxes] rect').count()).toBe(1);

    const failed = page.locator('#lane-failed li[data-name="team.jpg"]');
    await failed.waitFor({ timeout: 30_000 });
    await expect.poll(() => failed.locator('[data-testid=reason]').innerText()).toContain('faces/team.jpg: 3 faces found: crop the image to one person');
    expect(await failed.locator('[data-testid=face-check]').innerText()).toMatch(/^face check refused · 3 faces, \d+ px, \d+ px, \d+ px · sharpness \d+ · brightness \d+$/);
    expect(await failed.locator('[data-testid=face-boxes] rect').count()).toBe(3);
    await screenshot(page, 'enrollment-face-check-desktop');
    expect(errors).toEqual([]);
  });
});
