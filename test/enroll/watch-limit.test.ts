import fs, { existsSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { jpeg, startRig, waitFor } from './fixtures.js';

// 5,000 files dropped at once while the inotify watch limit is exhausted.
//
// Simulated, and only here: fs.inotify.max_user_watches is one setting for the whole machine
// (this kernel does not scope it per user namespace), and other test runs share the machine, so
// lowering it for real would break their watchers. Instead fs.watch (what chokidar calls for each
// folder and file) throws what libuv throws when inotify_add_watch(2) fails with ENOSPC, after the
// first few watches: the same error object, through the same path into chokidar.

const WATCHES_ALLOWED = 8;

function limitWatches(): void {
  const real = fs.watch;
  let n = 0;
  fs.watch = ((...args: Parameters<typeof fs.watch>) => {
    if (++n > WATCHES_ALLOWED) {
      throw Object.assign(new Error(`ENOSPC: System limit for number of file watchers reached, watch '${String(args[0])}'`), { code: 'ENOSPC', errno: -28, syscall: 'watch', path: String(args[0]) });
    }
    return real(...args);
  }) as typeof fs.watch;
  syncBuiltinESMExports();
  onTestFinished(() => {
    fs.watch = real;
    syncBuiltinESMExports();
  });
}

describe('inotify watch limit reached', () => {
  it('5,000 files dropped at once are all taken by the rescan, and the log says once what is wrong and how to fix it', async () => {
    limitWatches();
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(l) } });
    const rig = await startRig({ logger, config: { enroll: { rescan_interval: 500 } } });
    // Most are refused at once (not images: no upload needed), 20 are real faces.
    const names = Array.from({ length: 5000 }, (_, i) => `f${String(i).padStart(4, '0')}.jpg`);
    for (let i = 0; i < names.length; i += 250) {
      await Promise.all(names.slice(i, i + 250).map((n, j) => writeFile(join(rig.dir, 'faces', n), i + j < 20 ? jpeg() : `not an image ${n}`)));
    }
    await waitFor('every file finished', () => {
      const st = rig.enrollment.status().kinds.faces;
      return st.done + st.failed === 5000;
    }, 170_000);
    await waitFor('the inbox empty', () => readdirSync(join(rig.dir, 'faces')).length === 0, 20_000);
    expect(rig.enrollment.status().kinds.faces).toMatchObject({ done: 20, failed: 4980 });
    // Every original with its result beside it (written just after the move).
    await waitFor('every result file', () => readdirSync(join(rig.dir, 'failed/faces')).filter((f) => f.endsWith('.error.json')).length === 4980
      && readdirSync(join(rig.dir, 'done/faces')).filter((f) => f.endsWith('.json')).length === 20, 20_000);
    expect(existsSync(join(rig.dir, 'failed/faces/f4999.error.json'))).toBe(true);
    expect(rig.emulator.state.faces()).toHaveLength(20);
    const limit = lines.filter((l) => l.includes('max_user_watches'));
    expect(limit).toHaveLength(1);
    expect(limit[0]).toContain('sysctl');
    expect(limit[0]).toContain('every file is still taken');
  }, 200_000);
});
