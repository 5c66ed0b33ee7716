import type { Logger } from '../log/logger.js';

// Start-up and the daemon's steady state want different V8 settings; the steady state's are set
// once the first face sync has succeeded (v8.setFlagsFromString, node:v8 loaded only then).
//
// The interrupt budget: V8 optimizes a function (TurboFan, on its worker threads) once it has run
// about --interrupt-budget bytes of bytecode. The first face sync runs long loops over the whole
// group, which pay for their optimization many times over: with eight times the budget, the first
// sync of 10,000 faces took 1.54x its plain loop instead of 1.25x (r8). After it the daemon's work
// is event handlers run once per file or request, and with V8's budget a fresh daemon's first
// enrollment burst spent about a fifth of its CPU compiling them; eight times the budget cut the
// burst's CPU per file by 10 to 15 % (docs/performance-history.md, r15).
//
// The heap's growing factor: with the unit's --max-old-space-size=256, V8 lets the old generation
// grow by 1.3x its live data, but at least about 8 MB, before the next full GC. During the first
// sync the live data is large (the group's records) and 1.3x keeps its peak RSS down. In the steady
// state it is about 10 MB, and a burst of uploads promotes short-lived per-file objects at ~12 MB/s:
// a full GC (marking all of it on V8's threads) every 400 ms, 6 to 7 in a burst of 1,000 files.
// 2.5x (--heap-growing-percent=150) halves them: about 0.1 ms less CPU per file, about 5 MB more
// peak RSS (docs/performance-history.md, r17). A later sync of a whole new group of 10,000 faces
// under it peaked at 102 MB, against 89 for the first sync (the target is 120).
//
// Not from the start (the unit's ExecStart=): the first sync would pay (the budget; the battery
// saver mode below would not, but would need node's command line). Set at run time, a flag
// changes V8's flag hash, so a code cache made after it would be refused at the next start: the
// code caches are made by a daemon that never sets them (steadyV8Flags). A chunk first read
// after it compiles without its cache (a few ms, once); the daemon has read its chunks by then (an
// enrollment burst read 28, all from their caches).

/** Eight times V8 11.3's default budget (67,584, Node 20). */
export const STEADY_INTERRUPT_BUDGET = 8 * 67_584;

// V8 12 (Node 22 and later) counts invocations per tier (Maglev, TurboFan) instead and knows no
// --interrupt-budget: set there, V8 printed "Error: unrecognized flag" on stderr, into the journal,
// and changed nothing. Its counterpart there is --battery-saver-mode, V8's own setting for a
// process that should spend few CPU cycles: functions go no further than Maglev (no TurboFan
// compiles on the worker threads) and the GC's parallel phases use one helper thread. On the
// package's Node 24, bursts of 1,000 files after it (6 pairs): the daemon's RSS 15 s after 66.5 to
// 67.0 MB instead of 72.4 to 72.8 (TurboFan's own code, 5 MB of node's, is never paged in), the
// peak 97 MB instead of 101 (medians), CPU per file the same within the noise, also on a quarter
// core and in a daemon warmed by 3,000 files first (docs/performance-history.md, r37). Unlike the
// budget it would not slow the first sync (2 pairs from the start: the first sync of 10,000 faces
// took 4.20 and 3.51 s of CPU against 4.62 and 3.78, peak 100.5 and 97.1 MB against 109.3 and
// 106.8), but from the start it would have to be on node's command line (Node 20, a checkout's
// node, refuses it there), and a first sync of a whole group happens once in a terminal's life.
const LAST_V8_WITH_INTERRUPT_BUDGET = 11;

// And V8's memory saver mode beside it. Under steady traffic V8 13's memory reducer (the GCs that
// give the old space's free pages back after a full GC) never ran: it judged the allocation rate
// high at every check, so the daemon kept its busiest moment's committed heap for good, and a soak
// of the package (Node 24) ended 1.13x above its RSS floor against Node 20's 0.98x. In the mode
// every full GC is a memory-reducing one (compacting, free pages released at once): 60 minutes of
// the soak met its floor (0.996x), and with a group of 10,000 faces the daemon's median RSS was 113
// MB instead of 158. The price: V8 also releases its pool of free pages, so the young generation's
// are mapped afresh after each full GC; it shows only where much is allocated, as when 10,000 faces
// are listed whole (the console's list: 81 ms of CPU instead of 57; docs/performance-history.md,
// r38). V8 13 (Node 24) is the first to know the flag (Node 22's 12.4 and Node 23's 12.9 refuse it).
const FIRST_V8_WITH_MEMORY_SAVER_MODE = 13;

/** The old generation may grow to 2.5x its live data before a full GC (see above). */
export const STEADY_HEAP_GROWING_PERCENT = 150;

/** Set in the environment of the daemon that makes the code caches (scripts/code-cache.cjs). */
export const CODE_CACHE_RUN_ENV = 'TERMINAL_AGENT_CODE_CACHE_RUN';

/**
 * The V8 flags to set once start-up is done (none: leave V8's alone), for the V8 of
 * `process.versions.v8`. A flag the operator gave node (its command line, or NODE_OPTIONS in a
 * drop-in) wins, and the code-cache run keeps V8's flags as they are.
 */
export function steadyV8Flags(nodeFlags: readonly string[], env: NodeJS.ProcessEnv, v8Version: string): string[] {
  if (env[CODE_CACHE_RUN_ENV] === '1') return [];
  const given = [...nodeFlags, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map((f) => f.replace(/_/g, '-'));
  // Given as --name=value, or for a boolean as --name or --no-name.
  const unset = (name: string) => !given.some((f) => f.startsWith(`--${name}=`) || f === `--${name}` || f === `--no-${name}`);
  const major = Number.parseInt(v8Version, 10);
  const budgetKnown = major <= LAST_V8_WITH_INTERRUPT_BUDGET;
  return [
    ...(budgetKnown && unset('interrupt-budget') ? [`--interrupt-budget=${STEADY_INTERRUPT_BUDGET}`] : []),
    ...(!budgetKnown && unset('battery-saver-mode') ? ['--battery-saver-mode'] : []),
    ...(major >= FIRST_V8_WITH_MEMORY_SAVER_MODE && unset('memory-saver-mode') ? ['--memory-saver-mode'] : []),
    ...(unset('heap-growing-percent') ? [`--heap-growing-percent=${STEADY_HEAP_GROWING_PERCENT}`] : []),
  ];
}

/** Sets V8's flags for what runs from now on; node:v8 is loaded only here. */
export async function setSteadyV8Flags(flags: readonly string[], logger: Logger): Promise<void> {
  try {
    const { setFlagsFromString } = await import('node:v8');
    for (const flag of flags) setFlagsFromString(flag);
    logger.debug({ v8_flags: flags }, 'first face sync done: V8 now runs with the steady state\'s flags');
  } catch (err) {
    logger.warn({ err }, 'could not set V8\'s flags for the steady state; the daemon runs with V8\'s own');
  }
}

/**
 * What the daemon calls after each generation's first face sync (a reload builds a new one):
 * sets the flags the first time only; undefined when there are none to set.
 */
export function steadyFlagSetter(flags: readonly string[], logger: Logger): (() => void) | undefined {
  if (flags.length === 0) return undefined;
  let set = false;
  return () => {
    if (set) return;
    set = true;
    void setSteadyV8Flags(flags, logger);
  };
}
