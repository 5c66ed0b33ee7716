import { Registry } from '../metrics/prom.js';
import type { Logger } from '../log/logger.js';
import { ConfigError, describeError } from '../errors.js';
import { namedFileProblems } from '../config/named-files.js';
import type { DaemonEnv, DaemonState } from './daemon.js';
import type { AgentConfig } from '../config/schema.js';
import { createAgent } from './agent.js';
import { statusLine } from './daemon-status.js';

// SIGHUP: read the config again. An invalid file is reported and the running config kept (a typo
// must not take a terminal down). A valid one is applied with the least disturbance:
// - only log.level changed: set the level, nothing else moves;
// - nothing changed: resume what an operator expects a HUP to resume (a face sync stopped by 401
//   after the credential file was fixed in place is seen as a change, but a HUP after a password
//   rotation on the server side is not);
// - anything else: a new service client and a new generation of components, built exactly as at
//   start-up; the old generation drains first (uploads finish or stay in the outbox).

export interface Reloader {
  reload(): Promise<void>;
  /** Resolves when no reload is running. */
  idle(): Promise<void>;
}

export function createReloader(state: DaemonState, d: DaemonEnv, logger: Logger): Reloader {
  let running: Promise<void> | undefined;
  let again = false;

  async function once(): Promise<void> {
    const started = performance.now();
    await state.notifier.notify({ RELOADING: 1, MONOTONIC_USEC: String(process.hrtime.bigint() / 1000n), STATUS: 'reloading configuration' });
    try {
      let next;
      try {
        next = await d.loadConfig(d.configPath);
        // The files it names too, as a start reads them: found later, a CA file that cannot be read
        // stopped the agent halfway through the reload, and nothing restarted it.
        const fileProblems = await namedFileProblems(next);
        if (fileProblems.length > 0) throw new ConfigError(fileProblems);
      } catch (err) {
        state.reload.lastError = describeError(err);
        state.metrics.reloads.inc({ result: 'rejected' });
        // Not the file's fault: another build was installed under this daemon, which stops.
        if (state.programReplaced(err, 'SIGHUP reload')) return;
        const problems = err instanceof ConfigError ? err.problems : undefined;
        logger.error({ err: describeError(err), problems }, 'reload refused: the new configuration is invalid; the running configuration stays in use (fix the file, then send SIGHUP again)');
        return;
      }
      if (state.phase === 'stopping') return;
      const change = diffConfig(state.config, next);
      if (change.needsRestart.length > 0) {
        logger.warn({ keys: change.needsRestart }, 'these settings only take effect after a restart (systemctl restart terminal-agent); their running values are kept');
      }
      const cfg = change.effective;
      if (cfg.log.level !== state.config.log.level) d.logger.level = cfg.log.level;
      d.setConfig(cfg);
      if (change.changed.length === 0) {
        state.config = cfg;
        state.agent.resume();
        logger.info('configuration unchanged; resumed anything stopped by a refused credential');
      } else if (onlyLogChanged(change)) {
        state.config = cfg;
        logger.info({ changed: change.changed }, 'configuration reloaded (log level only)');
      } else {
        const serviceChanged = change.changed.some((k) => k.startsWith('service.'));
        // Made before anything stops, so a client this config cannot make leaves the agent running.
        const newClient = serviceChanged
          ? d.createClient(cfg.service, d.logger.child({ component: 'client' }), state.metrics.onRequest, (err, operation) => state.programReplaced(err, operation))
          : undefined;
        state.phase = 'reloading';
        await state.agent.stop();
        const oldClient = state.client;
        if (newClient) state.client = newClient;
        state.agent = createAgent({
          config: cfg, logger: d.logger, db: state.db, client: state.client, metrics: new Registry(), events: state.events, env: d.env,
        });
        state.config = cfg;
        await state.agent.start();
        if (serviceChanged) await oldClient.close().catch(() => {});
        if (state.phase === 'reloading') state.phase = 'running';
        logger.info({ changed: change.changed, ms: Math.round(performance.now() - started) }, 'configuration reloaded; components restarted with it');
      }
      state.reload.count += 1;
      state.reload.lastAt = Date.now();
      state.reload.lastError = null;
      state.metrics.reloads.inc({ result: 'applied' });
    } catch (err) {
      state.reload.lastError = describeError(err);
      if (state.programReplaced(err, 'SIGHUP reload')) return;
      // The running agent was stopped and the new one did not start (its face cache's start-up
      // repair on a disk gone bad): a daemon that ran on would sync and upload nothing, for good.
      if (state.phase === 'reloading') state.cannotContinue(err, RESTART_FAILED);
      else logger.error({ err }, 'reload failed while restarting components');
    } finally {
      await state.notifier.notify({ READY: 1, STATUS: statusLine(state) });
    }
  }

  return {
    reload() {
      if (running) {
        // A HUP during a reload: read the file once more after this one, not twice in parallel.
        again = true;
        return running;
      }
      running = (async () => {
        do {
          again = false;
          await once();
        } while (again && state.phase !== 'stopping');
        running = undefined;
      })();
      return running;
    },
    async idle() {
      await running;
    },
  };
}

// What a SIGHUP can change in place. Paths the process is bound to (the state it holds locked, the
// socket it listens on) need a restart: for those the running values are kept and the operator told.

const RESTART_FAILED = 'the components could not be started again with the new configuration: the daemon stops and exits 1, so that systemd (Restart=always) starts it afresh; the outbox resumes where it stopped (if the start fails too, journalctl -u terminal-agent and terminal-agent doctor say why)';

// The web console keeps its listener, password and sessions until a restart.
export const RESTART_ONLY_KEYS = ['state_dir', 'control.socket', 'log.format', 'metrics', 'console'] as const;

function isRestartOnly(key: string): boolean {
  return RESTART_ONLY_KEYS.some((r) => key === r || key.startsWith(`${r}.`));
}

export interface ConfigChange {
  /** Dotted keys whose value changed (secret values never included, only their key). */
  changed: string[];
  /** Changed keys that only a restart applies; kept at their running value. */
  needsRestart: string[];
  /** The config to run with: the new one, with restart-only keys at their running value. */
  effective: AgentConfig;
}

export function diffConfig(running: AgentConfig, next: AgentConfig): ConfigChange {
  const changed: string[] = [];
  walk(running, next, '', changed);
  const needsRestart = changed.filter(isRestartOnly);
  const effective: AgentConfig = { ...next, state_dir: running.state_dir, control: { ...next.control, socket: running.control.socket }, log: { ...next.log, format: running.log.format }, metrics: running.metrics, console: running.console };
  return { changed: changed.filter((k) => k !== 'file'), needsRestart, effective };
}

/** True when the change is only the log level (applied without touching any component). */
export function onlyLogChanged(change: ConfigChange): boolean {
  return change.changed.every((k) => k.startsWith('log.') || isRestartOnly(k));
}

function walk(a: unknown, b: unknown, prefix: string, out: string[]): void {
  if (isObject(a) && isObject(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      walk(a[key], b[key], prefix ? `${prefix}.${key}` : key, out);
    }
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(prefix);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
