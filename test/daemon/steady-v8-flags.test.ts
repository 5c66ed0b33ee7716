import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI_ENTRY, REPO_ROOT } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { CODE_CACHE_RUN_ENV, STEADY_HEAP_GROWING_PERCENT, STEADY_INTERRUPT_BUDGET, steadyV8Flags } from '../../src/daemon/steady-v8-flags.js';
import { daemonFiles, isReady, spawnDaemon, type LogLine } from './daemon-harness.js';

// After its first face sync the daemon sets V8's interrupt budget (V8 11, Node 20; later V8s have
// none, and get V8's battery saver mode instead; V8 13, Node 24, its memory saver mode too) and heap
// growing factor (src/daemon/steady-v8-flags.ts).

const RAISED = 'first face sync done: V8 now runs with the steady state\'s flags';
const BUDGET = `--interrupt-budget=${STEADY_INTERRUPT_BUDGET}`;
const GROWING = `--heap-growing-percent=${STEADY_HEAP_GROWING_PERCENT}`;
const SAVER = '--battery-saver-mode';
const MEMORY = '--memory-saver-mode';
const V8_11 = '11.3.244.8-node.38';
// What the daemon sets on the node running these tests (each V8's set is pinned by the cases below).
const STEADY = steadyV8Flags([], {}, process.versions.v8);
const BUDGET_HERE = STEADY.includes(BUDGET);
const MEMORY_HERE = STEADY.includes(MEMORY);
// The built module, imported by the child processes below.
const BUILT = JSON.stringify(join(REPO_ROOT, 'dist', 'daemon', 'steady-v8-flags.js'));
const raised = (l: LogLine) => l.msg === RAISED;

describe('V8\'s flags after start-up', () => {
  it('are set once the first face sync has succeeded, also when that sync comes after a reload', async () => {
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-jit-'), emulator, { terminalSecret: 'wrong-secret-value-000000', logLevel: 'debug' });
    const d = spawnDaemon(files.configPath);
    await d.waitLog(isReady);
    // A refused credential: the sync failed, start-up's work is not done.
    await d.waitLog((l) => l.component === 'faces' && /401|credential|refused/i.test(JSON.stringify(l)), 15_000, 'the 401');
    expect(d.logs().filter(raised)).toEqual([]);

    files.write({ terminalSecret: emulator.terminals[0]!.terminal_secret, logLevel: 'debug' });
    d.signal('SIGHUP');
    await d.waitLog((l) => l.component === 'faces' && l.msg === 'face sync done', 15_000, 'a sync after the reload');
    const line = await d.waitLog(raised, 5_000, 'the steady flags');
    expect(line).toMatchObject({ level: 'debug', v8_flags: STEADY });
    // Every flag set is one this V8 knows: an unknown one makes V8 print an error to stderr.
    expect(d.stderr()).not.toMatch(/unrecognized flag|Try --help/);

    // Another reload rebuilds the components (a new sync interval); their first sync raises nothing again.
    const syncs = () => d.logs().filter((l) => l.component === 'faces' && l.msg === 'face sync done').length;
    const before = syncs();
    files.write({ terminalSecret: emulator.terminals[0]!.terminal_secret, logLevel: 'debug', syncInterval: '4m' });
    d.signal('SIGHUP');
    await d.waitLog(() => syncs() > before, 15_000, 'the next generation\'s first sync');
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(d.logs().filter(raised)).toHaveLength(1);
  });

  it('leave alone what node\'s command line or NODE_OPTIONS sets, and are none in the run that makes the code caches', async () => {
    expect(steadyV8Flags([], {}, V8_11)).toEqual([BUDGET, GROWING]);
    expect(steadyV8Flags(['--max-inlined-bytecode-size-cumulative=460'], { NODE_OPTIONS: '--max-semi-space-size=2 --max-old-space-size=256' }, V8_11)).toEqual([BUDGET, GROWING]);
    expect(steadyV8Flags(['--interrupt-budget=100000'], {}, V8_11)).toEqual([GROWING]);
    expect(steadyV8Flags(['--interrupt_budget=100000'], {}, V8_11)).toEqual([GROWING]);
    expect(steadyV8Flags([], { NODE_OPTIONS: '--max-old-space-size=256 --heap_growing_percent=50' }, V8_11)).toEqual([BUDGET]);
    expect(steadyV8Flags(['--heap-growing-percent=50'], { NODE_OPTIONS: '--interrupt-budget=1000' }, V8_11)).toEqual([]);
    expect(steadyV8Flags([], { [CODE_CACHE_RUN_ENV]: '1' }, V8_11)).toEqual([]);
    // Node 22's and 24's V8s know no interrupt budget; they get the battery saver mode (V8 11 has
    // none), and Node 24's the memory saver mode too (Node 22's and 23's V8s have none).
    expect(steadyV8Flags([], {}, '12.4.254.21-node.57')).toEqual([SAVER, GROWING]);
    expect(steadyV8Flags([], {}, '12.9.202.28-node.14')).toEqual([SAVER, GROWING]);
    expect(steadyV8Flags([], {}, '13.6.233.17-node.63')).toEqual([SAVER, MEMORY, GROWING]);
    expect(steadyV8Flags(['--heap-growing-percent=50'], {}, '13.6.233.17-node.63')).toEqual([SAVER, MEMORY]);
    for (const flag of ['--no-battery-saver-mode', '--battery_saver_mode', '--battery-saver-mode=false']) {
      expect(steadyV8Flags([flag, '--heap-growing-percent=50'], {}, '13.6.233.17-node.63')).toEqual([MEMORY]);
    }
    for (const flag of ['--no-memory-saver-mode', '--memory_saver_mode', '--memory-saver-mode=true']) {
      expect(steadyV8Flags([flag], { NODE_OPTIONS: '--heap-growing-percent=50' }, '13.6.233.17-node.63')).toEqual([SAVER]);
    }
    expect(steadyV8Flags(['--battery-saver-mode-x'], {}, '13.6.233.17-node.63')).toEqual([SAVER, MEMORY, GROWING]);

    // The same through a real daemon, its node flags on the command line as ExecStart= puts them
    // (a flag this V8 does not know would stop node before the daemon starts).
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-jit-'), emulator, { logLevel: 'debug' });
    const given = BUDGET_HERE ? '--interrupt-budget=100000 --heap-growing-percent=50'
      : `--no-battery-saver-mode ${MEMORY_HERE ? '--no-memory-saver-mode ' : ''}--heap-growing-percent=50`;
    const d = spawnDaemon(files.configPath, {}, ['run'], REPO_ROOT, CLI_ENTRY, ['sh', '-c', `exec "$0" ${given} "$@"`]);
    await d.waitLog((l) => l.component === 'faces' && l.msg === 'face sync done', 15_000, 'the first sync');
    d.signal('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(d.logs().filter(raised)).toEqual([]);
  });

  it('changes V8\'s flags for what is compiled afterwards (a code cache made before is refused after)', () => {
    // In a child process: the test runner's own V8 is left as it was.
    const script = `
      const { Script } = require('node:vm');
      const src = 'function f(a) { return a + 1 } f(1)';
      // Each Script under its own name: V8's in-memory compilation cache would serve the same text
      // and name again without looking at the cached data.
      const cache = new Script(src, { filename: 'made.js' }).createCachedData();
      const { setSteadyV8Flags } = await import(${BUILT});
      const before = new Script(src, { filename: 'before.js', cachedData: cache }).cachedDataRejected;
      const lines = [];
      await setSteadyV8Flags(${JSON.stringify(STEADY)}, { debug: (o, m) => lines.push(m), warn: (o, m) => lines.push('warn ' + m) });
      const after = new Script(src, { filename: 'after.js', cachedData: cache }).cachedDataRejected;
      console.log(JSON.stringify({ before, after, lines }));`;
    // Both are flags of this node: on its command line, an unknown one is refused.
    expect(spawnSync(process.execPath, [...STEADY, '-e', '0'], { encoding: 'utf8' }).status).toBe(0);
    expect(spawnSync(process.execPath, ['--heap-growing-percentage=150', '-e', '0'], { encoding: 'utf8' }).status).not.toBe(0);
    const r = spawnSync(process.execPath, ['--input-type=commonjs', '-e', `(async () => {${script}})()`], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ before: false, after: true, lines: [RAISED] });
  });

  it('stop TurboFan compiling what runs afterwards on V8 12 and later (V8 11\'s budget only delays it)', () => {
    // A hot function before the flags (the control: TurboFan compiles it on every V8) and one after,
    // in a child run with --trace-opt, which names each function V8 marks for TurboFan (V8 prints
    // them through its own buffer, so the functions' names tell before from after, not the order).
    const script = `
      const hot = (name) => (0, eval)('(function ' + name + '(a) { let s = 0; for (let i = 0; i < 50; i++) s += a * i; return s; })');
      const run = (fn) => { let t = 0; for (let i = 0; i < 300000; i++) t += fn(i); return t; };
      run(hot('hot_before_flags'));
      const { setSteadyV8Flags } = await import(${BUILT});
      await setSteadyV8Flags(${JSON.stringify(STEADY)}, { debug() {}, warn(o, m) { console.error(m); } });
      run(hot('hot_after_flags'));`;
    const r = spawnSync(process.execPath, ['--trace-opt', '--input-type=commonjs', '-e', `(async () => {${script}})()`], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const turbofan = (name: string) => r.stdout.split('\n').filter((l) => l.includes(name) && /for optimization to TURBOFAN/.test(l)).length;
    expect(turbofan('hot_before_flags')).toBeGreaterThan(0);
    if (BUDGET_HERE) expect(turbofan('hot_after_flags')).toBeGreaterThan(0);
    else expect(turbofan('hot_after_flags')).toBe(0);
  });

  it('make every full GC give memory back on V8 13 and later (V8\'s memory saver mode)', () => {
    // The same churn (objects kept a while, then dropped: full GCs on the way) in a child run with
    // --trace-gc, after the steady flags and after none (the control). V8 names a memory-reducing
    // full GC "Mark-Compact (reduce)"; without the mode one comes only from V8's memory reducer,
    // which runs from a timer, never inside the synchronous loop.
    const churn = (flags: readonly string[]) => {
      const script = `
        const { setSteadyV8Flags } = await import(${BUILT});
        await setSteadyV8Flags(${JSON.stringify(flags)}, { debug() {}, warn(o, m) { console.error(m); } });
        let keep = [];
        for (let r = 0; r < 150; r++) {
          for (let i = 0; i < 20000; i++) keep.push({ a: i, b: 'x' + i });
          if (keep.length > 400000) keep = keep.slice(200000);
        }`;
      const r = spawnSync(process.execPath, ['--trace-gc', '--input-type=commonjs', '-e', `(async () => {${script}})()`], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const full = r.stdout.split('\n').filter((l) => l.includes('Mark-Compact'));
      return { full: full.length, reduce: full.filter((l) => l.includes('(reduce)')).length };
    };
    const control = churn([]);
    expect(control.full).toBeGreaterThan(0);
    expect(control.reduce).toBe(0);
    const steady = churn(STEADY);
    expect(steady.full).toBeGreaterThan(0);
    if (MEMORY_HERE) expect(steady.reduce).toBe(steady.full);
    else expect(steady.reduce).toBe(0);
  });
});
