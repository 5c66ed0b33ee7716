// The "Pi budget" of the benchmarks: a cgroup whose processes get a quarter of one core (CFS
// bandwidth: 25 ms of CPU per 100 ms period). cgroup v2 `cpu.max` = "25000 100000" when the cpu
// controller is on the unified hierarchy, else cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`,
// the same kernel mechanism. Needs root. Not a benchmark itself (run.mjs skips this file).
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** { procs, how, remove() } or { error } when no such cgroup can be made here. */
export function quarterCoreCgroup(name = `ta-bench-${process.pid}`) {
  const made = (path, procs, how) => ({ path, procs, how, remove() { try { rmdirSync(path); } catch { /* a process still in it */ } } });
  try {
    if (readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').split(/\s+/).includes('cpu')) {
      const path = join('/sys/fs/cgroup', name);
      mkdirSync(path, { recursive: true });
      writeFileSync(join(path, 'cpu.max'), '25000 100000');
      return made(path, join(path, 'cgroup.procs'), `cgroup v2 ${path}/cpu.max = "25000 100000"`);
    }
  } catch { /* no cgroup v2 cpu controller: try v1 */ }
  try {
    const path = join('/sys/fs/cgroup/cpu', name);
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, 'cpu.cfs_period_us'), '100000');
    writeFileSync(join(path, 'cpu.cfs_quota_us'), '25000');
    return made(path, join(path, 'cgroup.procs'), `cgroup v1 ${path}: cpu.cfs_quota_us 25000 per cpu.cfs_period_us 100000 (no cpu controller on the v2 hierarchy here)`);
  } catch (err) {
    return { error: err.message };
  }
}

/** argv that runs `argv` inside the cgroup (the shell joins it, then execs: same pid). */
export function inCgroup(cgroup, argv) {
  return cgroup ? ['sh', '-c', `echo $$ > ${cgroup.procs} && exec "$@"`, 'sh', ...argv] : argv;
}
