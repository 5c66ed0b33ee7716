import { describe, expect, it, onTestFinished } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createFolderWatcher } from '../../src/enroll/watcher.js';
import { createLayout, ensureFolders } from '../../src/enroll/layout.js';
import { tmpDir } from '../helpers/tmp.js';

// The folder watcher on real folders and real chokidar. A file's settle_time starts when a scan or
// an event first shows it, so in burst mode (chokidar closed, the folders scanned) a file copied
// after a scan waits for the next one: here a copy of 600 files that goes on for about half a
// second, with the burst's scan period long (1 s), as settle_time / 2 is by default.

describe('the enrollment folder watcher in burst mode', () => {
  it('scans again at once while a copy goes on, so files copied after a scan are seen within about 100 ms, and slows down once it ends', async () => {
    const root = tmpDir('ta-watcher-');
    const layout = createLayout(join(root, 'enroll'), join(root, 'state'));
    await ensureFolders(layout);
    const firstSeen = new Map<string, number>();
    let scans = 0;
    const watcher = createFolderWatcher({
      layout,
      rescanMs: 60_000,
      burstScanMs: 1_000,
      logger: pino({ level: 'silent' }),
      // Nothing is taken here: every file offered stays waiting.
      load: () => firstSeen.size,
      onCandidate(rel) {
        if (!firstSeen.has(rel)) firstSeen.set(rel, performance.now());
      },
      onKnowledgeScan: () => void scans++,
    });
    await watcher.start();
    onTestFinished(() => watcher.stop());

    // 600 files, 50 at a time every 40 ms: the first 200 or so switch the watcher to burst mode.
    const written = new Map<string, number>();
    for (let i = 0; i < 600; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => {
        const rel = `faces/p${String(i + j).padStart(4, '0')}.jpg`;
        return writeFile(join(layout.root, rel), 'x').then(() => void written.set(rel, performance.now()));
      }));
      await sleep(40);
    }
    const copyEnd = performance.now();
    for (const t0 = performance.now(); firstSeen.size < 600 && performance.now() - t0 < 5_000;) await sleep(20);
    expect(firstSeen.size).toBe(600);
    // Seen late by at most one quick scan (and the machine's noise), not by the 1 s scan period.
    const late = [...written].map(([rel, at]) => firstSeen.get(rel)! - at);
    expect(Math.max(...late)).toBeLessThan(500);

    // The copy is over: after a quick scan or two the scans go back to the burst's period (1 s),
    // not every 100 ms: in 2 s from half a second after the copy, 2 or 3 scans, not 20.
    await sleep(Math.max(0, copyEnd + 500 - performance.now()));
    const before = scans;
    await sleep(2_000);
    expect(scans - before, `scans in 2 s: ${scans - before}`).toBeLessThanOrEqual(3);
  }, 20_000);
});
