import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI_ENTRY, REPO_ROOT } from '../helpers/cli.js';
import { startTestEmulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { CODE_CACHE_RUN_ENV, STEADY_INTERRUPT_BUDGET, steadyInterruptBudget } from '../../src/daemon/jit-budget.js';
import { daemonFiles, isReady, spawnDaemon, type LogLine } from './daemon-harness.js';

// After its first face sync the daemon raises V8's interrupt budget (src/daemon/jit-budget.ts).

const RAISED = 'first face sync done: V8 now optimizes the steady state\'s code later';
const raised = (l: LogLine) => l.msg === RAISED;

describe('V8\'s interrupt budget after start-up', () => {
  it('is raised once the first face sync has succeeded, also when that sync comes after a reload', async () => {
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
    const line = await d.waitLog(raised, 5_000, 'the raised budget');
    expect(line).toMatchObject({ level: 'debug', interrupt_budget: STEADY_INTERRUPT_BUDGET });

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

  it('is left alone when node\'s command line sets one, and in the run that makes the code caches', async () => {
    expect(steadyInterruptBudget([], {})).toBe(STEADY_INTERRUPT_BUDGET);
    expect(steadyInterruptBudget(['--max-inlined-bytecode-size-cumulative=460'], {})).toBe(STEADY_INTERRUPT_BUDGET);
    expect(steadyInterruptBudget(['--interrupt-budget=100000'], {})).toBeUndefined();
    expect(steadyInterruptBudget(['--interrupt_budget=100000'], {})).toBeUndefined();
    expect(steadyInterruptBudget([], { [CODE_CACHE_RUN_ENV]: '1' })).toBeUndefined();

    // The same through a real daemon, its node flags on the command line as ExecStart= puts them.
    const emulator = await startTestEmulator();
    const files = daemonFiles(tmpDir('ta-jit-'), emulator, { logLevel: 'debug' });
    const d = spawnDaemon(files.configPath, {}, ['run'], REPO_ROOT, CLI_ENTRY, ['sh', '-c', 'exec "$0" --interrupt-budget=100000 "$@"']);
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
      const { raiseInterruptBudget } = await import(${JSON.stringify(join(REPO_ROOT, 'dist', 'daemon', 'jit-budget.js'))});
      const before = new Script(src, { filename: 'before.js', cachedData: cache }).cachedDataRejected;
      const lines = [];
      await raiseInterruptBudget(${STEADY_INTERRUPT_BUDGET}, { debug: (o, m) => lines.push(m), warn: (o, m) => lines.push('warn ' + m) });
      const after = new Script(src, { filename: 'after.js', cachedData: cache }).cachedDataRejected;
      console.log(JSON.stringify({ before, after, lines }));`;
    const r = spawnSync(process.execPath, ['--input-type=commonjs', '-e', `(async () => {${script}})()`], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ before: false, after: true, lines: [RAISED] });
  });
});
