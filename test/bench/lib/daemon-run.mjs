// Shared by the enroll and faces-sync benchmarks: the real daemon (dist/main.js run) spawned as
// the unit runs it, its own CPU and peak RSS read from /proc, and the "Pi budget" confinement.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
// BENCH_MAIN=PATH runs another build of the daemon: tsc's own output (`npx tsc -p tsconfig.json
// --outDir prof-build`, then BENCH_MAIN=prof-build/main.js with BENCH_PROF) gives --cpu-prof
// profiles whose frames name src/ modules and lines, where the bundle's are chunks of long lines.
export const MAIN = process.env.BENCH_MAIN ? resolve(process.env.BENCH_MAIN) : join(ROOT, 'dist/main.js');
// BENCH_NODE=PATH runs the agent (MAIN) on another node binary, such as the package's runtime
// (with BENCH_MAIN pointing into the same tree, whose addons are built for it). The plain loops
// and the emulator stay on the benchmark's own node: the yardstick does not move with the runtime.
export const NODE = process.env.BENCH_NODE ? resolve(process.env.BENCH_NODE) : process.execPath;
const require = createRequire(join(ROOT, 'package.json'));
const unix = require('unix-dgram');
const CLK_TCK = 100; // Linux USER_HZ

/** utime + stime of one process (all its threads) and its reaped children, ms. */
export function procCpuMs(pid) {
  const t = procCpuSplitMs(pid);
  return t.user + t.sys;
}

/**
 * Its own and its children's, reaped or still running, with theirs (a child it spawned is the
 * daemon's cost too).
 */
export function procCpuSplitMs(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return { user: 0, sys: 0 }; // a child that ended meanwhile: its parent's figures have it
  }
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const t = { user: ((Number(f[11]) + Number(f[13])) / CLK_TCK) * 1000, sys: ((Number(f[12]) + Number(f[14])) / CLK_TCK) * 1000 };
  for (const child of liveChildren(pid)) {
    const c = procCpuSplitMs(child);
    t.user += c.user;
    t.sys += c.sys;
  }
  return t;
}

/** The process's children now (from every thread's /proc children list). */
export function liveChildren(pid) {
  const out = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      out.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean));
    }
  } catch {
    // gone meanwhile
  }
  return out;
}

/** utime+stime per thread (by name, where it has one) of a live process, ms: where the CPU goes (main, libuv pool, V8). */
export function procThreadCpuMs(pid) {
  const out = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const comm = String(tid) === String(pid) ? 'main' : name === 'node' ? `thread ${tid}` : name;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[comm] = (out[comm] ?? 0) + ((Number(f[11]) + Number(f[12])) / CLK_TCK) * 1000;
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** A size line of /proc/PID/status (VmHWM, VmRSS: kB) of a live process, MB. */
function procStatusMb(pid, key) {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Peak resident set (VmHWM) of a live process, MB. */
export function procPeakRssMb(pid) {
  return procStatusMb(pid, 'VmHWM');
}

/** Resident now (VmRSS), MB. */
export function procRssMb(pid) {
  return procStatusMb(pid, 'VmRSS');
}

/** Anonymous resident memory (RssAnon: heaps, stacks; not the pages of files such as node's binary) of a live process, MB. */
export function procAnonMb(pid) {
  return procStatusMb(pid, 'RssAnon');
}

/**
 * Bytes a live process (and its live children) caused to be written to storage: /proc/PID/io
 * write_bytes, counted when a page is first dirtied, so a file rewritten before it reached the disk
 * counts each time. A file system's own journal and metadata are not in it (see bench-fs.mjs
 * deviceWrittenBytes). null where /proc/PID/io cannot be read.
 */
export function procWriteBytes(pid) {
  let io;
  try {
    io = readFileSync(`/proc/${pid}/io`, 'utf8');
  } catch {
    return null;
  }
  let bytes = Number(/^write_bytes: (\d+)$/m.exec(io)?.[1] ?? NaN);
  for (const child of liveChildren(pid)) bytes += procWriteBytes(child) ?? 0;
  return Number.isFinite(bytes) ? bytes : null;
}

/** Open file descriptors of a live process. */
export function procFdCount(pid) {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Threads of a live process. */
export function procThreadCount(pid) {
  return readdirSync(`/proc/${pid}/task`).length;
}

/** Entries in a daemon's index.json (one per line; counted, not parsed), 0 when there is none yet. */
export function indexEntries(path) {
  try {
    return readFileSync(path, 'utf8').split('"face_id"').length - 1;
  } catch {
    return 0;
  }
}

// The unit's Environment= lines (MALLOC_ARENA_MAX, MALLOC_TRIM_THRESHOLD_) apply, as on a terminal.
// BENCH_UNIT=PATH reads another unit: a package tree's (usr/lib/systemd/system/terminal-agent.service),
// which packaging/unit.sh made from the checkout's, to run that tree's daemon as its own unit runs it.
const unitText = readFileSync(process.env.BENCH_UNIT ? resolve(process.env.BENCH_UNIT) : join(ROOT, 'systemd/terminal-agent.service'), 'utf8');
export const unitEnv = Object.fromEntries([...unitText.matchAll(/^Environment="?(\w+)=(.*?)"?$/gm)].map((m) => [m[1], m[2]]));
// And the node flags on its ExecStart= (between node and the program). BENCH_NODE_ARGS come after
// them, so a run can set one of them back (V8 takes the last value of a flag).
const execWords = (/^ExecStart=(.*)$/m.exec(unitText)?.[1] ?? '').split(/\s+/).slice(1);
const programAt = execWords.findIndex((w) => !w.startsWith('-'));
export const unitNodeArgs = programAt < 0 ? execWords : execWords.slice(0, programAt);
// And its CPUSchedulingPolicy= (batch), set with util-linux's chrt as systemd sets it before exec.
// BENCH_SCHED=other (or batch) runs the daemon with that policy instead, to compare the two.
const unitPolicy = process.env.BENCH_SCHED ?? /^CPUSchedulingPolicy=(\w+)$/m.exec(unitText)?.[1] ?? 'other';
/** The daemon's command line prefix for the scheduling policy; none for the kernel's default. */
export const schedPrefix = unitPolicy === 'other' ? [] : ['chrt', `--${unitPolicy}`, '0'];

/**
 * "Pi budget": a quarter of one core. cgroup v2 `cpu.max 25000 100000` where the unified hierarchy
 * has the cpu controller, else cgroup v1 `cpu.cfs_quota_us 25000` / `cpu.cfs_period_us 100000`
 * (the same CFS bandwidth limit); null when neither can be created (not root, no cgroupfs).
 * Processes are started inside it by a shell that moves itself in before exec'ing node.
 */
export function createPiBudget(name) {
  const tries = [
    { base: '/sys/fs/cgroup', v2: true },
    { base: '/sys/fs/cgroup/unified', v2: true },
    { base: '/sys/fs/cgroup/cpu', v2: false },
  ];
  for (const t of tries) {
    try {
      if (t.v2) {
        const ctl = readFileSync(join(t.base, 'cgroup.controllers'), 'utf8');
        if (!ctl.split(/\s+/).includes('cpu')) continue;
        const dir = join(t.base, name);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'cpu.max'), '25000 100000');
        return { dir, how: `cgroup v2 ${dir} cpu.max "25000 100000"`, close: () => rmdirSync(dir) };
      }
      if (!existsSync(join(t.base, 'cpu.cfs_quota_us'))) continue;
      const dir = join(t.base, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), '25000');
      return { dir, how: `cgroup v1 ${dir} cpu.cfs_quota_us 25000 / cpu.cfs_period_us 100000 (no cpu controller on cgroup v2 here)`, close: () => rmdirSync(dir) };
    } catch {
      // not this one
    }
  }
  return null;
}

let straceRuns = 0;

/** spawn(node, args) — inside `budget` (a createPiBudget result) when given. */
export function spawnNode(args, opts, budget) {
  // BENCH_STRACE=FILE: syscall counts of the daemon and its threads (strace -c -f), FILE.1, FILE.2
  // ... for each daemon started; BENCH_STRACE=1: files in the temporary folder, named on stderr.
  // Profiling only: the daemon's CPU and RSS are then those of a traced process.
  if (process.env.BENCH_STRACE && args.includes(MAIN)) {
    const base = process.env.BENCH_STRACE === '1' ? join(tmpdir(), `ta-bench-strace-${process.pid}`) : process.env.BENCH_STRACE;
    const file = `${base}.${++straceRuns}`;
    process.stderr.write(`strace -c -f of the daemon: ${file}\n`);
    return spawn('strace', ['-c', '-f', '-o', file, NODE, ...args], opts);
  }
  if (process.env.BENCH_WRAP && args.includes(MAIN)) return spawn(process.env.BENCH_WRAP, [NODE, ...args], opts);
  const argv = [...(args.includes(MAIN) ? [...schedPrefix, NODE] : [process.execPath]), ...args];
  if (!budget) return spawn(argv[0], argv.slice(1), opts);
  const quoted = argv.map((a) => `'${String(a).replace(/'/g, `'\\''`)}'`).join(' ');
  return spawn('/bin/sh', ['-c', `echo $$ > '${join(budget.dir, 'cgroup.procs')}' && exec ${quoted}`], opts);
}

/**
 * The config every benchmark's daemon runs with, in `dir`; `extra` is appended YAML (other sections).
 * The log level is the product's default, info (an "enrollment file done" line per file), unless
 * BENCH_LOG_LEVEL says otherwise; until r8 it was warn (info measured within the noise of it).
 */
/**
 * The daemon's config.yaml in `dir`. The face check is off unless `faceCheck` says otherwise: the
 * benchmarks' images are random pixels (test/bench/face-check.mjs runs it on real photos).
 */
export function writeDaemonConfig(dir, emulator, terminal, extra = '', level = process.env.BENCH_LOG_LEVEL || 'info', faceCheck = 'off') {
  writeFileSync(join(dir, 'secret'), terminal.terminal_secret);
  writeFileSync(join(dir, 'key'), emulator.apiKey);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `service:
  base_url: ${emulator.baseUrl}
  face_base_url: ${emulator.faceBaseUrl}
  terminal_secret_file: ${join(dir, 'secret')}
  api_key_file: ${join(dir, 'key')}
state_dir: ${join(dir, 'state')}
control:
  socket: ${join(dir, 'ctl.sock')}
enroll:
  dir: ${join(dir, 'enroll')}
  face_check:
    mode: ${faceCheck}
log:
  level: ${level}
${extra}`);
  return config;
}

/**
 * The web console's URL, from the "web console listening" line of the daemon's log on
 * `child.stdout` (a pipe), within 20 s. The pipe is read on afterwards (flowing, or by the caller's
 * own listener): a daemon whose log nobody reads would block on a full pipe.
 */
export async function consoleUrl(child) {
  let out = '';
  const take = (b) => (out += b);
  child.stdout.on('data', take);
  try {
    for (let i = 0; i < 200; i++) {
      await sleep(100);
      const url = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => l.msg === 'web console listening')?.url;
      if (url) return url;
    }
    throw new Error(`the console did not start:\n${out.slice(-3000)}`);
  } finally {
    child.stdout.off('data', take);
    child.stdout.resume();
  }
}

/**
 * BENCH_JOURNAL=1: the daemon logs as under systemd, through the journal's native socket
 * (src/log/journal-destination.ts, chosen because INVOCATION_ID is set and stdout is no terminal),
 * to a receiver in a process of its own that takes every entry and drops it, as journald takes
 * them in another process on a terminal. Without it the benchmarks' daemons log JSON lines to
 * /dev/null: another path, which costs the daemon the same within the noise of a burst.
 * Returns the environment to give the daemon, and `stop` for the receiver.
 */
export async function startJournalReceiver(dir) {
  if (!process.env.BENCH_JOURNAL) return { env: {}, stop: async () => undefined };
  const path = join(dir, `journal-${process.hrtime.bigint()}.sock`);
  // It counts the entries, and says how many when stopped: proof that the daemon logged there.
  const code = `let n = 0;
const s = require(${JSON.stringify(require.resolve('unix-dgram'))}).createSocket('unix_dgram', () => { n++; });
s.bind(${JSON.stringify(path)}); process.stdout.write('bound\\n');
process.on('SIGTERM', () => { process.stdout.write(n + '\\n'); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  await Promise.race([
    new Promise((resolveBound) => child.stdout.once('data', resolveBound)),
    exited.then((c) => { throw new Error(`BENCH_JOURNAL: the journal receiver exited (${c}) before it was bound`); }),
  ]);
  return {
    env: { INVOCATION_ID: 'bench0000000000000000000000000000', TERMINAL_AGENT_JOURNAL_SOCKET: path },
    /** Stops the receiver; resolves to the number of entries it took. */
    async stop() {
      child.kill('SIGTERM');
      await exited;
      return Number(out.split('\n').at(-2));
    },
  };
}

/**
 * Spawns `terminal-agent run --config CONFIG` as systemd would (NOTIFY_SOCKET, the unit's
 * environment); `ready` resolves at READY=1. BENCH_NODE_ARGS, then `extraArgs`, go to node (e.g.
 * --cpu-prof), `env` is added to its environment (NODE_EXTRA_CA_CERTS for lib/tls-front.mjs);
 * `stdout: 'pipe'` gives its log to the caller.
 */
export function spawnDaemon(dir, config, { budget, extraArgs = [], env: extraEnv = {}, stdout } = {}) {
  const notifyPath = join(dir, `notify-${process.hrtime.bigint()}.sock`);
  const sock = unix.createSocket('unix_dgram');
  const ready = new Promise((resolve) => sock.on('message', (buf) => { if (buf.toString().includes('READY=1')) resolve(); }));
  sock.bind(notifyPath);
  // BENCH_DAEMON_ENV='{"NAME":"value"}': extra environment for trying settings before they go in the unit.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...unitEnv, ...extraEnv, ...JSON.parse(process.env.BENCH_DAEMON_ENV ?? '{}'), NOTIFY_SOCKET: notifyPath, WATCHDOG_USEC: '30000000' };
  const benchNodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawnNode([...unitNodeArgs, ...benchNodeArgs, ...extraArgs, MAIN, 'run', '--config', config], { env, stdio: ['ignore', stdout ?? (benchNodeArgs.length > 0 ? 'inherit' : 'ignore'), 'inherit'] }, budget);
  const exited = new Promise((resolve) => child.once('close', resolve));
  const failed = exited.then((code) => { throw new Error(`the daemon exited (${code}) before READY=1`); });
  return {
    child,
    /** The daemon's own process (under BENCH_STRACE/BENCH_WRAP, not the wrapper's): its CPU and RSS. */
    get pid() {
      return daemonPid(child.pid);
    },
    ready: Promise.race([ready, failed]).finally(() => sock.close()),
    async stop() {
      // SIGTERM goes to the daemon itself: strace with -o FILE and a program blocks it, and
      // another BENCH_WRAP may not pass it on, so the bench would wait forever.
      if (child.exitCode === null && child.signalCode === null) process.kill(daemonPid(child.pid), 'SIGTERM');
      await exited;
    },
  };
}

/** The daemon's node process: `pid` itself, or the process under BENCH_STRACE/BENCH_WRAP running MAIN. */
function daemonPid(pid) {
  const runsMain = (p) => {
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      return argv[0] === NODE && argv.includes(MAIN);
    } catch {
      return false;
    }
  };
  const queue = [String(pid)];
  while (queue.length > 0) {
    const p = queue.shift();
    if (runsMain(p)) return Number(p);
    queue.push(...liveChildren(p));
  }
  return pid;
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** "median 1.23 (1.10 to 1.40)" */
export function spread(xs, digits = 2, unit = '') {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${median(s).toFixed(digits)}${unit} (${s[0].toFixed(digits)} to ${s.at(-1).toFixed(digits)}, n=${s.length})`;
}
