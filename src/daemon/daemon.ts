
import { join } from 'node:path';
import { Registry } from '../metrics/prom.js';
import type { Logger } from '../log/logger.js';
import type { Db } from '../db/database.js';
import { openStateDb, takeInstanceLock } from './open-state-db.js';
import type { AgentConfig } from '../config/schema.js';
import type { ServiceClient, RequestEvent } from '../client/types.js';
import { AbortedError, ExitCode, describeError, isProgramReplaced, missingProgramFile } from '../errors.js';
import { createControlServer, type ControlServer } from '../control/control-server.js';
import type { InstanceLock } from './instance-lock.js';
import { createNotifier, watchdogIntervalMs, type Notifier } from './sd-notify.js';
import { createWatchdog, type Watchdog } from './watchdog.js';
import { createDaemonMetrics, type DaemonMetrics } from './daemon-metrics.js';
import { diskOf } from './daemon-status.js';
import { createStateQueries, type StateQueries } from './state-queries.js';
import { createAgent, type Agent } from './agent.js';
import { createReloader } from './reload.js';
import { statusLine, controlHandlers } from './daemon-status.js';
import { startConsole, type ConsoleHandle } from './console-wiring.js';
import { configSecrets, secretsOfCurrent } from '../config/secrets.js';
import { createEventBus, type EventBus } from '../events/event-bus.js';
import type { MetricsServer } from '../metrics/metrics-server.js';

// The daemon's lifecycle: lock the state, open the database, build and start the components, open
// the control socket, then tell systemd READY=1. Stopping runs the same steps backwards, bounded in
// time so that systemd never has to SIGKILL us (TimeoutStopSec=30s in the unit, 20s here).

export const STOP_BOUND_MS = 20_000;

export interface DaemonEnv {
  configPath: string;
  env: NodeJS.ProcessEnv;
  pid: number;
  version: string;
  logger: Logger;
  loadConfig(path: string): Promise<AgentConfig>;
  createClient(config: AgentConfig['service'], logger: Logger, onRequest: (e: RequestEvent) => void, onProgramReplaced: (err: unknown, operation: string) => void): ServiceClient;
  /** Shared with the logger's scrubber: the secrets of the config in use. */
  setConfig(cfg: AgentConfig): void;
  onReload(listener: () => void): () => void;
  onFatal(listener: (err: unknown, origin: string) => void): () => void;
}

export interface RunningDaemon {
  readonly config: AgentConfig;
  readonly socketPath: string;
  /** The web console's address, when console.listen is set and it is listening. */
  readonly consoleUrl: string | undefined;
  /** Drains and closes everything; true when it finished within STOP_BOUND_MS. Safe to call twice. */
  stop(): Promise<boolean>;
  /**
   * Aborts when the daemon must stop and exit 1, for systemd to start it afresh: a part of the
   * program found gone (the reason is that error), or a reload that could not start the components.
   */
  readonly restartNeeded: AbortSignal;
}

/** Mutable state of one daemon instance (never module-level). */
export interface DaemonState {
  config: AgentConfig;
  phase: 'starting' | 'running' | 'reloading' | 'stopping';
  startedAt: number;
  startedMono: number; // the monotonic clock's: uptime stays true when NTP steps the wall clock
  db: Db;
  queries: StateQueries;
  client: ServiceClient;
  agent: Agent;
  metrics: DaemonMetrics;
  /** One per process: survives reloads, so Last-Event-ID stays meaningful. */
  events: EventBus;
  notifier: Notifier;
  watchdog: Watchdog;
  reload: { count: number; lastAt: number | null; lastError: string | null };
  /**
   * Whether `err` is a part of the program found gone (isProgramReplaced); if so the daemon stops
   * as on SIGTERM and exits 1. `where` names what needed it, for the log.
   */
  programReplaced(err: unknown, where: string): boolean;
  /** Logs `why` and stops the daemon as on SIGTERM, which then exits 1 (a reload that left no agent running). */
  cannotContinue(err: unknown, why: string): void;
}

/** `shutdown` (SIGTERM) ends a start that waits for room in state_dir (wait-for-room.ts). */
export async function startDaemon(d: DaemonEnv, initial: AgentConfig, shutdown?: AbortSignal): Promise<RunningDaemon> {
  const logger = d.logger.child({ component: 'daemon' });
  const cfg = initial;
  d.setConfig(cfg);
  const notifier = createNotifier({ socketPath: d.env.NOTIFY_SOCKET, logger });
  let lock: InstanceLock;
  try {
    lock = await takeInstanceLock({ stateDir: cfg.state_dir, pid: d.pid, logger, notifier, signal: shutdown });
  } catch (err) {
    notifier.close();
    throw err;
  }
  const offFatal = d.onFatal((err, origin) => {
    if (isProgramReplaced(err)) logger.fatal({ err: describeError(err), origin, missing: missingProgramFile(err) }, REPLACED);
    else logger.fatal({ err, origin }, 'exiting on an uncaught error (a bug in terminal-agent): systemd restarts the agent, and the outbox resumes where it stopped; please report this line');
  });
  // The bundle's chunks are read when first needed: one found gone means another build was
  // installed under this process (the package's preinst stops the daemon first, so a half-done or
  // manual upgrade). What else of it is gone cannot be known: a restart from the installed files
  // is the fix, so the daemon drains and exits 1, and Restart=always starts it again.
  // A reload that could not start the components again ends the same way (cannotContinue).
  const restart = new AbortController();
  const stopForRestart = (err: unknown, fields: Record<string, unknown>, why: string): void => {
    if (restart.signal.aborted) return;
    logger.error({ err: describeError(err), ...fields }, why);
    restart.abort(err);
  };
  const programReplaced = (err: unknown, where: string): boolean => {
    if (!isProgramReplaced(err)) return false;
    stopForRestart(err, { where, missing: missingProgramFile(err) }, REPLACED);
    return true;
  };
  const cannotContinue = (err: unknown, why: string): void => stopForRestart(err, {}, why);
  const undo: Array<() => Promise<void> | void> = [() => notifier.close(), () => lock.release(), offFatal];
  try {
    // state_dir exists: the instance lock made it (takeInstanceLock).
    const db = await openStateDb({ path: join(cfg.state_dir, 'agent.db'), logger, notifier, signal: shutdown });
    undo.unshift(() => {
      db.close();
    });
    const queries = createStateQueries(db);
    // Secrets of the config in use, which a reload may change (state.config is set below); the
    // disk gauge reads the config of the current generation at scrape time.
    let secretsOf: () => readonly string[] = () => configSecrets(cfg);
    const events = createEventBus({ secrets: () => secretsOf() });
    const metrics = createDaemonMetrics({ version: d.version, queries: () => queries, eventClients: () => events.subscribers(), disk: () => diskOf(state.config).readSync() });
    const client = d.createClient(cfg.service, d.logger.child({ component: 'client' }), metrics.onRequest, (err, operation) => programReplaced(err, operation));
    // READY=1 promises config, database, folders and the control socket; the first face sync and
    // the player's warm-up start once it is sent (measured: a third less CPU before READY).
    let markReady = () => {};
    const afterReady = new Promise<void>((resolve) => (markReady = resolve));
    const agent = createAgent({ config: cfg, logger: d.logger, db, client, metrics: new Registry(), events, env: d.env, afterReady });
    const state: DaemonState = {
      config: cfg, phase: 'starting', startedAt: Date.now(), startedMono: performance.now(), db, queries, client, agent, metrics, events, notifier,
      watchdog: undefined as unknown as Watchdog,
      reload: { count: 0, lastAt: null, lastError: null },
      programReplaced,
      cannotContinue,
    };
    secretsOf = secretsOfCurrent(() => state.config);
    state.watchdog = createWatchdog({
      notifier,
      watchdogMs: watchdogIntervalMs(d.env, d.pid),
      checks: () => state.agent.progressChecks(),
      statusLine: () => statusLine(state),
      logger,
    });
    undo.unshift(() => state.client.close());
    await notifier.notify({ STATUS: 'starting components' });
    await agent.start();
    undo.unshift(() => state.agent.stop());

    const control: ControlServer = createControlServer({
      socketPath: cfg.control.socket,
      handlers: controlHandlers(state, d),
      logger: d.logger.child({ component: 'control' }),
      // A request being answered at a stop (a voiceprint upload waiting for the service, at most
      // VOICE_UPLOAD_STOP_GRACE_MS) gets its answer out before the bound ends the stop.
      drainMs: STOP_BOUND_MS - 2_000,
    });
    await control.start();
    undo.unshift(() => control.stop());
    const metricsServer = await startMetricsServer(cfg, state, d.logger.child({ component: 'metrics' }));
    undo.unshift(() => metricsServer?.stop());
    const webConsole: ConsoleHandle | undefined = await startConsole(state, d);
    if (webConsole) undo.unshift(() => webConsole.stop());

    state.phase = 'running';
    state.watchdog.start();
    const reloader = createReloader(state, d, logger);
    const unsubscribe = d.onReload(() => void reloader.reload());
    await notifier.notify({ READY: 1, MAINPID: d.pid, STATUS: statusLine(state) });
    markReady();
    await state.watchdog.tick();
    logger.info({ pid: d.pid, version: d.version, state_dir: cfg.state_dir, socket: cfg.control.socket, config: cfg.file ?? null, watchdog_ms: watchdogIntervalMs(d.env, d.pid) ?? null }, 'terminal-agent is ready');

    let stopping: Promise<boolean> | undefined;
    return {
      get config() {
        return state.config;
      },
      socketPath: cfg.control.socket,
      restartNeeded: restart.signal,
      get consoleUrl() {
        return webConsole?.url;
      },
      stop() {
        stopping ??= (async () => {
          state.phase = 'stopping';
          unsubscribe();
          logger.info('stopping: no new work is taken; in-flight uploads and the current utterance finish or stay in the outbox');
          await notifier.notify({ STOPPING: 1, STATUS: 'draining' });
          await reloader.idle();
          const drained = await withinBound(Promise.allSettled([control.stop(), webConsole?.stop(), state.agent.stop(), metricsServer?.stop()]).then((results) => {
            for (const r of results) if (r.status === 'rejected') logger.error({ err: r.reason }, 'a component failed while stopping');
          }), STOP_BOUND_MS);
          if (!drained) logger.error({ bound_ms: STOP_BOUND_MS }, 'components did not stop in time; closing the database anyway (unfinished uploads are retried from the outbox at the next start)');
          await state.watchdog.stop();
          await state.client.close().catch(() => {});
          db.close();
          notifier.close();
          lock.release();
          offFatal();
          logger.info({ clean: drained }, 'stopped');
          return drained;
        })();
        return stopping;
      },
    };
  } catch (err) {
    for (const step of undo) {
      try {
        await step();
      } catch (e) {
        logger.warn({ err: (e as Error).message }, 'clean-up after a failed start failed');
      }
    }
    throw err;
  }
}

const REPLACED = "this daemon's program files were replaced while it ran (an upgrade?) and a part it needs is gone: it stops and exits 1, so that systemd (Restart=always) starts the installed files; if this comes again after the restart, the installation is incomplete: reinstall the package (apt install --reinstall terminal-agent)";

/**
 * `terminal-agent run`: starts, waits for the first SIGTERM/SIGINT (or a part of the program
 * found gone, or components a reload could not start), drains, returns the exit code.
 */
export async function runDaemon(d: DaemonEnv, cfg: AgentConfig, shutdown: AbortSignal): Promise<number> {
  if (shutdown.aborted) throw new AbortedError('stopped before start-up finished');
  let daemon: RunningDaemon;
  try {
    daemon = await startDaemon(d, cfg, shutdown);
  } catch (err) {
    // Asked to stop while it waited for room in state_dir: a stop as asked, not a failure.
    if (!(err instanceof AbortedError && shutdown.aborted)) throw err;
    d.logger.child({ component: 'daemon' }).info({ err: err.message }, 'stopped before start-up finished');
    return 0;
  }
  await stopAsked(daemon, shutdown);
  if (!shutdown.aborted) {
    await daemon.stop();
    return ExitCode.failure;
  }
  d.logger.child({ component: 'daemon' }).info({ signal: String((shutdown.reason as Error)?.message ?? shutdown.reason) }, 'stop requested');
  const clean = await daemon.stop();
  return clean ? 0 : 1;
}

/**
 * Resolves at the first SIGTERM/SIGINT (`shutdown`), or once the daemon cannot go on
 * (`daemon.restartNeeded`): whichever came, the daemon is then stopped (`run`, `demo`).
 */
export function stopAsked(daemon: RunningDaemon, shutdown: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (shutdown.aborted || daemon.restartNeeded.aborted) return resolve();
    shutdown.addEventListener('abort', () => resolve(), { once: true });
    daemon.restartNeeded.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** The opt-in TCP listener for Prometheus: a port it cannot take is logged, not fatal. */
async function startMetricsServer(cfg: AgentConfig, state: DaemonState, logger: Logger): Promise<MetricsServer | undefined> {
  if (!cfg.metrics.listen) return undefined;
  const scrape = () => state.metrics.scrape([state.agent.metrics]).catch((err: unknown) => {
    state.programReplaced(err, 'GET /metrics over TCP');
    throw err;
  });
  // Imported only when asked for: it is node:http's server, which the daemon otherwise never loads.
  const { createMetricsServer } = await import('../metrics/metrics-server.js');
  const server = createMetricsServer({ listen: cfg.metrics.listen, scrape, logger });
  try {
    await server.start();
    return server;
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'Prometheus cannot scrape this agent over TCP (the control socket still serves /metrics)');
    return undefined;
  }
}

async function withinBound(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

