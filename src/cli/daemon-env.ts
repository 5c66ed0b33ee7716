import type { DestinationStream } from 'pino';
import type { CliContext } from './command.js';
import { createLogger, type Logger } from '../log/logger.js';
import { secretsOfCurrent } from '../config/secrets.js';
import type { AgentConfig } from '../config/schema.js';
import { createServiceClient } from '../client/service-client.js';
import { userAgent } from '../version.js';
import type { DaemonEnv } from '../daemon/daemon.js';
import { createJournalDestination, journalTarget } from '../log/journal-destination.js';

// Everything the daemon takes from the outside world, gathered from the CLI context in one place.

export interface DaemonEnvOptions {
  configPath: string;
  /** The config as loaded for start-up (its log level sets the logger's). */
  config: AgentConfig;
  /** Log destination; stdout when absent (journald). */
  destination?: DestinationStream;
  pid?: number;
}

/** Reads and validates the config (the config module, with zod and the YAML parser, loaded on first use). */
export async function loadDaemonConfig(ctx: CliContext, path: string): Promise<AgentConfig> {
  const { loadConfig } = await import('../config/load-config.js');
  return loadConfig({ path, env: ctx.env, cwd: ctx.cwd });
}

export function makeDaemonEnv(ctx: CliContext, options: DaemonEnvOptions): DaemonEnv {
  let current = options.config;
  const stdoutFd = (ctx.io.stdout as { fd?: number }).fd;
  const journal = options.destination ? undefined : journalTarget(current.log.format, ctx.env, stdoutFd);
  const destination = options.destination
    ?? (journal ? createJournalDestination({ socketPath: journal.socketPath, fallback: ctx.io.stdout }) : undefined);
  const logger: Logger = createLogger({
    level: current.log.level,
    secrets: secretsOfCurrent(() => current),
    ...(destination ? { destination } : {}),
  });
  return {
    configPath: options.configPath,
    env: ctx.env,
    pid: options.pid ?? process.pid,
    version: ctx.version,
    logger,
    loadConfig: (path) => loadDaemonConfig(ctx, path),
    createClient: (service, log, onRequest, onProgramReplaced) =>
      createServiceClient({ config: service, logger: log, userAgent: userAgent(ctx.version), onRequest, onProgramReplaced, env: ctx.env }),
    setConfig(cfg) {
      current = cfg;
    },
    onReload: (listener) => ctx.onReload(listener),
    onFatal: (listener) => ctx.onFatal(listener),
  };
}
