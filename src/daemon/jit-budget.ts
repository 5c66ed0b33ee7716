import type { Logger } from '../log/logger.js';

// V8 optimizes a function (TurboFan, on its worker threads) once it has run about
// --interrupt-budget bytes of bytecode. Start-up and the daemon's steady state want different
// budgets. The first face sync runs long loops over the whole group, which pay for their
// optimization many times over: with eight times the budget, the first sync of 10,000 faces took
// 1.54x its plain loop instead of 1.25x (r8). After it the daemon's work is event handlers run once
// per file or request, and with V8's budget a fresh daemon's first enrollment burst spent about a
// fifth of its CPU compiling them (0.4 to 0.5 ms per file on the compile threads); eight times the
// budget cut that to about 0.1 ms and the burst's CPU per file by 10 to 15 % (docs/performance-
// history.md, r15). So the budget is raised once the first sync has succeeded.
//
// Not from the start (the unit's ExecStart=): the first sync would pay. Set at run time, the flag
// changes V8's flag hash, so a code cache made after it would be refused at the next start: the
// code caches are made by a daemon that never raises it (steadyInterruptBudget). A chunk first read
// after it compiles without its cache (a few ms, once); the daemon has read its chunks by then (an
// enrollment burst read 28, all from their caches).

/** Eight times V8 11.3's default budget (67,584, Node 20). */
export const STEADY_INTERRUPT_BUDGET = 8 * 67_584;

/** Set in the environment of the daemon that makes the code caches (scripts/code-cache.cjs). */
export const CODE_CACHE_RUN_ENV = 'TERMINAL_AGENT_CODE_CACHE_RUN';

/**
 * The budget to set once start-up is done, or undefined to leave V8's alone: an --interrupt-budget
 * of the operator's on node's command line wins, and the code-cache run keeps V8's flags as they are.
 */
export function steadyInterruptBudget(nodeFlags: readonly string[], env: NodeJS.ProcessEnv): number | undefined {
  if (nodeFlags.some((f) => /^--interrupt[-_]budget=/.test(f))) return undefined;
  if (env[CODE_CACHE_RUN_ENV] === '1') return undefined;
  return STEADY_INTERRUPT_BUDGET;
}

/** Sets V8's interrupt budget for what runs from now on; node:v8 is loaded only here. */
export async function raiseInterruptBudget(budget: number, logger: Logger): Promise<void> {
  try {
    const { setFlagsFromString } = await import('node:v8');
    setFlagsFromString(`--interrupt-budget=${budget}`);
    logger.debug({ interrupt_budget: budget }, 'first face sync done: V8 now optimizes the steady state\'s code later');
  } catch (err) {
    logger.warn({ err }, 'could not raise V8\'s interrupt budget; the daemon runs with V8\'s own');
  }
}

/**
 * What the daemon calls after each generation's first face sync (a reload builds a new one):
 * raises the budget the first time only; undefined when there is no budget to set.
 */
export function budgetRaiser(budget: number | undefined, logger: Logger): (() => void) | undefined {
  if (budget === undefined) return undefined;
  let raised = false;
  return () => {
    if (raised) return;
    raised = true;
    void raiseInterruptBudget(budget, logger);
  };
}
