import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSyncfsRunner, type SyncfsRunner } from '../../src/util/syncfs.js';

/** This process's child processes (the syncfs helpers and what they run). */
function children(): string[] {
  const out: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) out.push(...readFileSync(`/proc/self/task/${tid}/children`, 'utf8').split(' ').filter(Boolean));
  return out;
}

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs one call through `runner`, which starts its helper, and returns that helper's pid. */
async function helperStartedBy(runner: SyncfsRunner, dir: string): Promise<string> {
  const before = new Set(children());
  await runner.run(dir, new AbortController().signal, 30_000);
  const started = children().filter((c) => !before.has(c));
  expect(started).toHaveLength(1);
  return started[0]!;
}

describe('createSyncfsRunner', () => {
  let runner: SyncfsRunner | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    runner?.close();
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });

  it('runs syncfs through one helper kept between calls, shares calls made meanwhile, and ends it at close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    dirs.push(dir);
    const before = new Set(children());
    runner = createSyncfsRunner();
    const helper = await helperStartedBy(runner, dir);
    // Ten calls at once: all resolve, through the same helper.
    await Promise.all(Array.from({ length: 10 }, () => runner!.run(dir, new AbortController().signal, 30_000)));
    expect(children().filter((c) => !before.has(c))).toEqual([helper]);
    runner.close();
    await until(() => !children().includes(helper));
  });

  it('serves every folder through the same helper, each call answered for its own folder', async () => {
    const a = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    const b = await mkdtemp(join(tmpdir(), 'ta-syncfs- spaced '));
    dirs.push(a, b);
    const before = new Set(children());
    runner = createSyncfsRunner();
    const calls = [a, b, a, join(b, 'missing'), b].map((d) => runner!.run(d, new AbortController().signal, 30_000).then(() => 'ok', (e: Error) => e.message));
    expect(await Promise.all(calls)).toEqual(['ok', 'ok', 'ok', expect.stringMatching(/missing' failed/), 'ok']);
    expect(children().filter((c) => !before.has(c))).toHaveLength(1);
    await expect(runner.run('/tmp/a\nb', new AbortController().signal, 30_000)).rejects.toThrow(/line break/);
  });

  it('fails a call whose sync fails (a folder that is not there), and the next call still works', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    dirs.push(dir);
    runner = createSyncfsRunner();
    await expect(runner.run(join(dir, 'missing'), new AbortController().signal, 30_000)).rejects.toThrow(/syncfs of '.*missing' failed/);
    await expect(runner.run(dir, new AbortController().signal, 30_000)).resolves.toBeUndefined();
  });

  it('is perl where it is installed: it makes the system call itself and names itself in ps', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    dirs.push(dir);
    runner = createSyncfsRunner();
    const helper = await helperStartedBy(runner, dir);
    expect(realpathSync(`/proc/${helper}/exe`)).toMatch(/\/perl[\d.]*$/);
    expect(readFileSync(`/proc/${helper}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()).toBe('terminal-agent syncfs');
    // Its own CPU, and that of any child it ever had (none: no fork of `sync` per call).
    for (let i = 0; i < 20; i++) await runner.run(dir, new AbortController().signal, 30_000);
    const stat = readFileSync(`/proc/${helper}/stat`, 'utf8');
    const [cutime, cstime] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(13, 15);
    expect([cutime, cstime]).toEqual(['0', '0']);
    await expect(runner.run(join(dir, 'missing'), new AbortController().signal, 30_000)).rejects.toThrow(/syncfs of '.*missing' failed/);
  });

  it('is a shell running `sync` where perl is missing, and serves the same', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    dirs.push(dir);
    runner = createSyncfsRunner({ perl: join(dir, 'no-perl-here') });
    const helper = await helperStartedBy(runner, dir);
    expect(realpathSync(`/proc/${helper}/exe`)).toMatch(/\/(dash|bash|sh)$/);
    await expect(runner.run(join(dir, 'missing'), new AbortController().signal, 30_000)).rejects.toThrow(/syncfs of '.*missing' failed/);
    await expect(runner.run(dir, new AbortController().signal, 30_000)).resolves.toBeUndefined();
  });

  it('a perl that cannot run fails the call it was started for (the caller falls back to fdatasync), and the shell serves from then on', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    dirs.push(dir);
    // Stands in for a broken perl install: a program that is there and exits 1 at once.
    runner = createSyncfsRunner({ perl: '/bin/false' });
    await expect(runner.run(dir, new AbortController().signal, 30_000)).rejects.toThrow();
    const helper = await helperStartedBy(runner, dir);
    expect(realpathSync(`/proc/${helper}/exe`)).toMatch(/\/(dash|bash|sh)$/);
    await expect(runner.run(dir, new AbortController().signal, 30_000)).resolves.toBeUndefined();
  });

  it('rejects at once when the caller aborts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ta-syncfs-'));
    dirs.push(dir);
    runner = createSyncfsRunner();
    const ac = new AbortController();
    ac.abort(new Error('stopping'));
    await expect(runner.run(dir, ac.signal, 30_000)).rejects.toThrow('stopping');
  });
});
