// The web console's screenshots in docs/console/ (linked from docs/console.md), as the browser
// tests make them: `npm run docs:screenshots` (after `npm run build`; needs Chromium) runs
// test/console/browser.test.ts, which leaves every page at desktop and phone sizes in
// test-artifacts/console/, and test/console/face-check-page.test.ts (the Enrollment page with the
// face check's verdicts), and copies the ones the docs show.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHOWN = ['login-desktop', 'overview-desktop', 'overview-phone', 'faces-desktop', 'faces-phone', 'enrollment-desktop', 'enrollment-phone', 'speech-phone', 'voice-desktop', 'enrollment-face-check-desktop'];

const run = spawnSync('npx', ['vitest', 'run', '--config', 'test/vitest.config.ts', 'test/console/browser.test.ts', 'test/console/face-check-page.test.ts'], { cwd: ROOT, stdio: 'inherit' });
if (run.status !== 0) {
  console.error('the browser tests failed: no screenshot copied');
  process.exit(1);
}
mkdirSync(join(ROOT, 'docs', 'console'), { recursive: true });
for (const name of SHOWN) {
  copyFileSync(join(ROOT, 'test-artifacts', 'console', `${name}.png`), join(ROOT, 'docs', 'console', `${name}.png`));
  console.log(`docs/console/${name}.png`);
}
