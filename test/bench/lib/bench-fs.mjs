// Where a benchmark keeps its folders (emulator data, the daemon's state_dir and enroll/, the plain
// loop's files). By default a fresh directory under the system's temp dir. BENCH_FS=ext4 puts it
// on a loop-mounted ext4 WITH a journal (mkfs.ext4's defaults, as a Raspberry Pi's SD card is
// formatted): this development VM's own ext4 has none, and a journal-less ext4 checks every new
// inode against those deleted in the last 30 s, so the figures swung with whatever the previous
// run deleted. BENCH_FS=ext4-nojournal makes the same without a journal: this VM's kind of disk,
// fresh, with none of the deletions of earlier runs and tests (for A/B runs of the same code, whose
// figures then hold still). Needs root (mount); without it the benchmark says so and is skipped.
//   BENCH_FS=ext4 [BENCH_FS_SIZE=8G] node test/bench/faces-sync.mjs
// createCost(dir) times the creation of empty files there: the runs print it beside their figures,
// as the daemon creates two files per enrolled file (its result and the cached image).
// The image is sparse (it takes only what is written), made in the temp dir, and unmounted and
// removed when the benchmark ends, fails, or is interrupted (Ctrl-C, SIGTERM).
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const run = (cmd, args) => execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
const why = (err) => (err?.stderr?.toString().trim() || err?.message || String(err)).split('\n')[0];

/**
 * A work directory for one benchmark: { dir, how, close() }. null when BENCH_FS asks for a file
 * system that cannot be made here (the reason is printed); the caller then skips its runs.
 */
export function benchWorkDir(prefix) {
  const kind = process.env.BENCH_FS ?? '';
  if (kind === '' || kind === 'tmp') {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    return { dir, how: `${dir} (the temp dir's own file system)`, close: () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (kind !== 'ext4' && kind !== 'ext4-nojournal') {
    console.log(`BENCH_FS=${kind}: unknown (ext4, ext4-nojournal, or unset for the temp dir): skipped`);
    return null;
  }
  const journal = kind === 'ext4';
  if (process.getuid?.() !== 0) {
    console.log(`BENCH_FS=${kind}: mounting a loop device needs root: skipped`);
    return null;
  }
  const base = mkdtempSync(join(tmpdir(), `${prefix}ext4-`));
  const image = join(base, 'fs.img');
  const dir = join(base, 'mnt');
  mkdirSync(dir);
  let mounted = false;
  const close = () => {
    if (mounted) {
      try {
        run('umount', [dir]);
      } catch {
        // A process of ours still holds a file there (a benchmark that failed mid-run): detach it
        // now; the kernel frees the loop device (autoclear) when the last user lets go.
        try { run('umount', ['-l', dir]); } catch { /* reported below by the leftover directory */ }
      }
      mounted = false;
    }
    rmSync(base, { recursive: true, force: true });
    process.removeListener('exit', close);
  };
  const onSignal = (sig) => {
    close();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  try {
    run('truncate', ['-s', process.env.BENCH_FS_SIZE ?? '8G', image]);
    // -F: it is a regular file, not a block device; the journal and features are mkfs's defaults.
    run('mkfs.ext4', ['-q', '-F', ...(journal ? [] : ['-O', '^has_journal']), image]);
    run('mount', ['-o', 'loop', image, dir]);
    mounted = true;
  } catch (err) {
    close();
    console.log(`BENCH_FS=${kind}: could not make or mount the loop file system (${why(err)}): skipped`);
    return null;
  }
  process.on('exit', close);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    dir,
    how: `a loop-mounted ext4 ${journal ? 'with a journal' : 'without a journal, new'} (${process.env.BENCH_FS_SIZE ?? '8G'} sparse image, mkfs.ext4 defaults${journal ? '' : ' but the journal'}) at ${dir}`,
    close: () => {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
      close();
    },
  };
}

/**
 * Bytes the block device under `dir` has been given to write since it appeared (its sectors written,
 * /sys/block/DEV/stat, journal and metadata included): what an SD card would take. Only on a
 * BENCH_FS loop mount, whose device holds nothing but the benchmark's files; null elsewhere.
 * Call settleDisk(dir) first: ext4 writes a file's data up to 30 s after it is written.
 */
export function deviceWrittenBytes(dir) {
  let source;
  try {
    source = execFileSync('findmnt', ['-n', '-o', 'SOURCE', '--target', dir], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
  const dev = /^\/dev\/(loop\d+)$/.exec(source)?.[1];
  if (!dev) return null;
  try {
    return Number(readFileSync(`/sys/block/${dev}/stat`, 'utf8').trim().split(/\s+/)[6]) * 512;
  } catch {
    return null;
  }
}

/**
 * Writes out what is dirty on `dir`'s file system (syncfs, coreutils `sync -f`) before a timed
 * phase, untimed: the daemon's fdatasync calls would otherwise wait behind the previous phase's
 * files (the plain loop's 300 MB, the emulator's seeded
 * images), which a terminal's disk never holds.
 */
export function settleDisk(dir) {
  try {
    run('sync', ['-f', dir]);
  } catch {
    // no `sync -f` (an old coreutils): the phases then pay for each other's writes as before
  }
}

/**
 * Microseconds to create an empty file in `dir` now (the median of 200, made in a new folder there
 * and left in place until the run's folders go: deleting them would slow the run itself). On a
 * journal-less ext4 it swings from about 20 µs to 700 µs with what was deleted in the last minutes.
 */
export function createCost(dir) {
  const probe = mkdtempSync(join(dir, 'create-probe-'));
  const us = [];
  for (let i = 0; i < 200; i++) {
    const t0 = process.hrtime.bigint();
    closeSync(openSync(join(probe, `f${i}`), 'wx'));
    us.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  us.sort((a, b) => a - b);
  return us[100];
}
