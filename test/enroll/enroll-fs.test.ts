import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEnrollFs } from '../../src/enroll/enroll-fs.js';
import { tmpDir } from '../helpers/tmp.js';
import { jpeg, layoutIn, put, readJson, startRig, waitFor } from './fixtures.js';

// Where the calls on enroll.dir's files are made (enroll-fs.ts): on the event loop when every
// folder is on state_dir's file system, else through libuv's thread pool, so that a USB stick or
// a share that hangs cannot stall the agent. A hung mount cannot be made here; a thread pool whose
// every thread is stuck can (each in an open of a FIFO nobody writes to): a call made in place
// answers through it, one made through the pool waits for it, with the event loop free meanwhile.
// "Another file system" is /dev/shm (a tmpfs), against the OS temp dir.

/** A folder on /dev/shm, removed after the test; the test fails if it is not another file system. */
function otherFileSystem(than: string): string {
  const dir = mkdtempSync('/dev/shm/ta-enroll-fs-');
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  expect(statSync(dir).dev, '/dev/shm must be another file system than the temp dir').not.toBe(statSync(than).dev);
  return dir;
}

/** Every thread of libuv's pool stuck until the returned function runs. */
async function stickThreadPool(): Promise<() => Promise<void>> {
  const dir = tmpDir('ta-pool-');
  const fifos = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) }, (_, i) => join(dir, `fifo-${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const opened = fifos.map((f) => open(f, 'r'));
  await sleep(100);
  return async () => {
    for (const f of fifos) {
      // The waiting open counts as a reader once its thread is in it: until then ENXIO.
      for (;;) {
        try {
          closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
          break;
        } catch {
          await sleep(5);
        }
      }
    }
    for (const fh of await Promise.all(opened)) await fh.close();
  };
}

describe('calls on enroll.dir (enroll-fs.ts)', () => {
  it('enroll.dir on state_dir\'s file system: the calls are made in place, and answer while the thread pool is stuck', async () => {
    const root = tmpDir('ta-enroll-fs-');
    const layout = await layoutIn(join(root, 'enroll'), root);
    const fs = createEnrollFs();
    expect(fs.onLoop).toBe(false);
    expect(await fs.decide(layout, layout.staging)).toBe(true);
    expect(fs.onLoop).toBe(true);
    const a = join(layout.inbox('faces'), 'a.jpg');
    writeFileSync(a, 'bytes');
    const release = await stickThreadPool();
    try {
      const timeout = sleep(2000).then(() => 'timed out');
      const work = (async () => {
        expect((await fs.lstat(a)).size).toBe(5);
        await fs.link(a, join(layout.staging, 'a.jpg'));
        await fs.rename(a, join(layout.done('faces'), 'a.jpg'));
        await fs.writeNew(join(layout.done('faces'), 'a.json'), '{}\n', 0o644);
        return 'done';
      })();
      expect(await Promise.race([work, timeout])).toBe('done');
    } finally {
      await release();
    }
    expect(readFileSync(join(layout.done('faces'), 'a.json'), 'utf8')).toBe('{}\n');
    expect(statSync(join(layout.staging, 'a.jpg')).ino).toBe(statSync(join(layout.done('faces'), 'a.jpg')).ino);
  });

  it('a folder on another file system (done/ a link to a USB stick): every call goes through the pool, the event loop stays free while it waits', async () => {
    const root = tmpDir('ta-enroll-fs-');
    const stick = otherFileSystem(root);
    mkdirSync(join(root, 'enroll'));
    symlinkSync(stick, join(root, 'enroll', 'done'));
    const layout = await layoutIn(join(root, 'enroll'), root);
    const fs = createEnrollFs();
    expect(await fs.decide(layout, layout.staging)).toBe(false);
    const a = join(layout.inbox('faces'), 'a.jpg');
    writeFileSync(a, 'bytes');
    const release = await stickThreadPool();
    let answered = false;
    const look = fs.lstat(a).then((st) => {
      answered = true;
      return st;
    });
    // Timers run meanwhile: the agent goes on (its watchdog, the control socket) while the call waits.
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    try {
      await sleep(200);
      expect(answered).toBe(false);
      expect(ticks).toBeGreaterThan(5);
    } finally {
      clearInterval(timer);
      await release();
    }
    expect((await look).size).toBe(5);
  });

  it('errors reach the caller as rejections with their codes, in place or through the pool', async () => {
    const root = tmpDir('ta-enroll-fs-');
    const here = createEnrollFs();
    expect(await here.decide(await layoutIn(join(root, 'enroll'), root), join(root, 'enroll-staging'))).toBe(true);
    const pool = createEnrollFs();
    for (const fs of [here, pool]) {
      const missing = join(root, 'missing.jpg');
      await expect(fs.lstat(missing)).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(fs.stat(missing)).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(fs.rename(missing, join(root, 'x'))).rejects.toMatchObject({ code: 'ENOENT' });
      writeFileSync(join(root, 'there.json'), 'kept');
      // A result file never replaces one that is there.
      await expect(fs.writeNew(join(root, 'there.json'), 'new', 0o644)).rejects.toMatchObject({ code: 'EEXIST' });
      expect(readFileSync(join(root, 'there.json'), 'utf8')).toBe('kept');
      await expect(fs.link(join(root, 'there.json'), join(root, 'there.json'))).rejects.toMatchObject({ code: 'EEXIST' });
    }
  });

  it('a state_dir folder that cannot be looked at, or one of enroll.dir\'s gone: through the pool', async () => {
    const root = tmpDir('ta-enroll-fs-');
    const layout = await layoutIn(join(root, 'enroll'), root);
    const fs = createEnrollFs();
    expect(await fs.decide(layout, layout.staging)).toBe(true);
    expect(await fs.decide(layout, join(root, 'no-such-folder'))).toBe(false);
    expect(fs.onLoop).toBe(false);
    rmSync(layout.failed('speakers'), { recursive: true });
    expect(await fs.decide(layout, layout.staging)).toBe(false);
  });
});

describe('enrollment with enroll.dir on another file system than state_dir', () => {
  it('says so when it starts, and a dropped face still goes through to done/ (staged by a copy, as no link can cross)', async () => {
    const lines: { msg: string; on_state_dir_fs?: boolean }[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { msg: string }) });
    const state = tmpDir('ta-enroll-state-');
    const stick = otherFileSystem(state);
    const rig = await startRig({ logger, config: { state_dir: state, enroll: { dir: stick } } });
    const started = lines.find((l) => l.msg.startsWith('enrollment folders watched'));
    expect(started).toMatchObject({ on_state_dir_fs: false });
    expect(started!.msg).toContain('not all on the file system of state_dir');
    const image = jpeg();
    await put(rig.dir, 'faces/ann.jpg', image);
    await waitFor('done/faces/ann.json', () => existsSync(join(stick, 'done/faces/ann.json')));
    expect(readJson(join(stick, 'done/faces/ann.json'))).toMatchObject({ kind: 'faces', name: 'ann', action: 'created' });
    expect(readFileSync(join(stick, 'done/faces/ann.jpg')).equals(image)).toBe(true);
    expect(existsSync(join(stick, 'faces/ann.jpg'))).toBe(false);
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['ann']);
  });

  it('the default layout (enroll.dir under state_dir) says it is on state_dir\'s file system', async () => {
    const lines: { msg: string; on_state_dir_fs?: boolean }[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { msg: string }) });
    const rig = await startRig({ logger });
    expect(lines.find((l) => l.msg.startsWith('enrollment folders watched'))).toMatchObject({ msg: 'enrollment folders watched', on_state_dir_fs: true });
    await put(rig.dir, 'faces/bo.jpg', jpeg());
    await waitFor('done/faces/bo.json', () => existsSync(join(rig.dir, 'done/faces/bo.json')));
  });
});
