// CLI start-up benchmark: `--help`, `status` against a running daemon, `faces list --cached` and
// `config check`, each paired with a bare `node -e 0` in the same run (A B A B ...), as a new user
// runs them: `node dist/main.js ...` (build first: `npm run build`). Whole-process figures from the
// kernel (wait4's rusage: user+sys CPU and peak RSS, through python3's os.wait4, as GNU time's
// are rounded to 10 ms) and the wall time from fork to reap; the ratio is taken pair by pair, its
// median quoted, because these machines are shared and noisy.
//   npm run bench -- cli            (RUNS=10 pairs per command by default)
// Then the "Pi budget" lines: the same runs with each process confined to a quarter of one core
// (pi-budget.mjs: a cgroup with 25 ms of CPU per 100 ms; needs root, else that part is skipped).
// Budget (Node 20): `--help` <= 1.5x bare node, the others <= 2x; a call through the control socket
// costs little more than the socket round trip (printed for comparison).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { quarterCoreCgroup } from './pi-budget.mjs';
import { MAIN, NODE, writeDaemonConfig } from './lib/daemon-run.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUNS = Number(process.env.RUNS ?? 10);
// fork, (join the cgroup,) exec, wait4: prints wall seconds, CPU seconds and peak RSS in KB.
const MEASURE_PY = `
import os, sys, time, json
procs = sys.argv[1]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    if procs:
        with open(procs, 'w') as f: f.write(str(os.getpid()))
    fd = os.open(os.devnull, os.O_RDWR)
    for i in (0, 1, 2): os.dup2(fd, i)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
print(json.dumps({"wall": time.monotonic() - t0, "cpu": ru.ru_utime + ru.ru_stime, "kb": ru.ru_maxrss, "status": status}))
`;
const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));

const dir = mkdtempSync(join(tmpdir(), 'ta-bench-cli-'));
const emulator = await startEmulator({ port: 0 });
const socket = join(dir, 'ctl.sock');
const config = writeDaemonConfig(dir, emulator, emulator.terminals[0]);
const env = { PATH: process.env.PATH, HOME: process.env.HOME };
const daemon = spawn(NODE, [MAIN, 'run', '--config', config], { env, stdio: ['ignore', 'ignore', 'ignore'] });
for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(50);
if (!existsSync(socket)) throw new Error('the daemon did not open its control socket');

/** One GET over the control socket from this (warm) process: the floor of any `status`. */
function socketRoundTripMs() {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = request({ socketPath: socket, path: '/status', method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => resolve(Number(process.hrtime.bigint() - t0) / 1e6));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Runs argv to its end (inside the cgroup when given): wall and CPU seconds, peak RSS in MB. */
function measure(argv, cgroup) {
  const r = JSON.parse(execFileSync('python3', ['-c', MEASURE_PY, cgroup ? cgroup.procs : '', ...argv], { env, encoding: 'utf8' }));
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (wait status ${r.status})`);
  return { wall: r.wall, cpu: r.cpu, rss: r.kb / 1024 };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const COMMANDS = [
  ['--help', ['--help'], 1.5],
  ['status (running daemon)', ['status', '--config', config], 2],
  ['faces list --cached', ['faces', 'list', '--cached', '--config', config], 2],
  ['config check', ['config', 'check', '--config', config], 2],
];
const BARE = [NODE, '-e', '0'];

function runAll(label, cgroup) {
  console.log(`\n${label}: ${RUNS} pairs each, A = the command, B = bare 'node -e 0', in turn`);
  const rows = [];
  for (const [name, args, budget] of COMMANDS) {
    const a = [];
    const b = [];
    measure([NODE, MAIN, ...args], cgroup); // warm-up: page cache, first-run effects
    measure(BARE, cgroup);
    for (let i = 0; i < RUNS; i++) {
      a.push(measure([NODE, MAIN, ...args], cgroup));
      b.push(measure(BARE, cgroup));
    }
    const ratio = median(a.map((x, i) => x.wall / b[i].wall));
    const cpuRatio = median(a.map((x, i) => x.cpu / Math.max(b[i].cpu, 0.001)));
    const r = { name, budget, wall: median(a.map((x) => x.wall)), bareWall: median(b.map((x) => x.wall)), ratio, cpu: median(a.map((x) => x.cpu)), bareCpu: median(b.map((x) => x.cpu)), cpuRatio, rss: median(a.map((x) => x.rss)), bareRss: median(b.map((x) => x.rss)) };
    rows.push(r);
    console.log(`  ${name.padEnd(24)} wall ${(r.wall * 1000).toFixed(0)} ms vs ${(r.bareWall * 1000).toFixed(0)} ms: ${r.ratio.toFixed(2)}x   CPU ${(r.cpu * 1000).toFixed(0)} ms vs ${(r.bareCpu * 1000).toFixed(0)} ms: ${r.cpuRatio.toFixed(2)}x   peak RSS ${r.rss.toFixed(1)} MB vs ${r.bareRss.toFixed(1)} MB`);
  }
  return rows;
}

const trips = [];
for (let i = 0; i < 20; i++) trips.push(await socketRoundTripMs());
const rows = runAll('CLI start-up, no CPU limit', undefined);
const status = rows.find((r) => r.name.startsWith('status'));
console.log(`  control socket round trip (GET /status from a warm process): median ${median(trips).toFixed(1)} ms; status costs ${((status.wall - status.bareWall) * 1000).toFixed(0)} ms over bare node`);

const cg = quarterCoreCgroup();
if (cg.error) console.log(`\nPi budget skipped: no cgroup with a CPU limit could be made here (${cg.error}); run as root on a cgroup v2 or v1 cpu hierarchy`);
else {
  try {
    runAll(`Pi budget (a quarter of one core: ${cg.how})`, cg);
  } finally {
    cg.remove();
  }
}

// Each budget is checked on wall time and on CPU (what a slow core pays), without a CPU limit.
console.log('');
for (const r of rows) {
  const within = r.ratio <= r.budget && r.cpuRatio <= r.budget;
  console.log(`  ${r.name.padEnd(24)} wall ${r.ratio.toFixed(2)}x, CPU ${r.cpuRatio.toFixed(2)}x (budget <= ${r.budget}x bare node): ${within ? 'within budget' : 'OUTSIDE budget'}`);
}
daemon.kill('SIGTERM');
await new Promise((r) => daemon.once('close', r));
await emulator.close();
rmSync(dir, { recursive: true, force: true });
