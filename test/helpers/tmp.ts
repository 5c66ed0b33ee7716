import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/**
 * A fresh directory under the OS temp dir, removed when the current test finishes (pass or fail).
 * Inside a test or beforeEach it goes when that test ends; called from beforeAll/describe (where
 * vitest has no test to attach to) it goes when the test worker exits. For an explicit lifetime,
 * use `tmpDirManual`.
 */
export function tmpDir(prefix = 'ta-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    onTestFinished(remove);
  } catch {
    process.once('exit', remove);
  }
  return dir;
}

/** A temp dir with an explicit remover, for beforeAll/afterAll scopes where onTestFinished is unavailable. */
export function tmpDirManual(prefix = 'ta-test-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Throws when the suite is not running as root, naming what the test needs root for. Without it a
 * test that mounts or unshares fails deep inside mount(8) or unshare(1) with a permission message
 * that does not say why the test needs it.
 */
export function needRoot(what: string): void {
  if (process.getuid?.() === 0) return;
  throw new Error(`this test needs root to ${what}: run the suite as root, as CI (.ci/run) does`);
}

/**
 * Mounts a tmpfs of `sizeMb` MiB (and at most `inodes` files and folders, its root included) on
 * `dir` (root only), unmounted when the current test finishes.
 */
export function mountTmpfs(dir: string, sizeMb: number, inodes?: number): string {
  needRoot('mount a small tmpfs');
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m${inodes ? `,nr_inodes=${inodes}` : ''}`, 'tmpfs', dir]);
  onTestFinished(() => {
    try {
      execFileSync('umount', ['-l', dir]);
    } catch {
      // already gone
    }
  });
  return dir;
}

/**
 * Throws one line when this environment cannot give the test a private mount namespace (as root
 * in a chroot or a container without CAP_SYS_ADMIN, unshare(2) is refused): why, and where the
 * test can run instead, rather than unshare(1)'s own words deep in a child's output.
 */
export function needMountNamespace(what: string): void {
  needRoot(what);
  const r = spawnSync('unshare', ['--mount', 'true'], { encoding: 'utf8' });
  if (r.status === 0) return;
  const why = (r.error?.message ?? r.stderr).trim().split('\n')[0];
  throw new Error(`this test needs a private mount namespace to ${what}, and this environment refuses one (${why}; a chroot or a container without CAP_SYS_ADMIN): run the suite on a machine or a VM as root (bash .ci/run)`);
}

/** Throws one line when `path` (a kernel file system's file) is missing here, naming what to run instead. */
export function needPath(path: string, what: string, instead: string): void {
  if (existsSync(path)) return;
  throw new Error(`this test reads ${path} to ${what}, and it is missing here (no ${path.split('/')[1]} mounted: a chroot?): ${instead}`);
}
