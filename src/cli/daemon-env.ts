import type { DestinationStream } from 'pino';
import type { CliContext } from './command.js';
import { createLogger, type Logger } from '../log/logger.js';
import { loadConfig, configSecrets } from '../config/load-config.js';
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

export function makeDaemonEnv(ctx: CliContext, options: DaemonEnvOptions): DaemonEnv {
  let current = options.config;
  const stdoutFd = (ctx.io.stdout as { fd?: number }).fd;
  const journal = options.destination ? undefined : journalTarget(current.log.format, ctx.env, stdoutFd);
  const destination = options.destination
    ?? (journal ? createJournalDestination({ socketPath: journal.socketPath, fallback: ctx.io.stdout }) : undefined);
  const logger: Logger = createLogger({
    level: current.log.level,
    secrets: () => configSecrets(current),
    ...(destination ? { destination } : {}),
  });
  return {
    configPath: options.configPath,
    env: ctx.env,
    pid: options.pid ?? process.pid,
    version: ctx.version,
    logger,
    loadConfig: (path) => loadConfig({ path, env: ctx.env, cwd: ctx.cwd }),
    createClient: (service, log, onRequest) =>
      createServiceClient({ config: service, logger: log, userAgent: userAgent(ctx.version), onRequest, env: ctx.env }),
    setConfig(cfg) {
      current = cfg;
    },
    onReload: (listener) => ctx.onReload(listener),
    onFatal: (listener) => ctx.onFatal(listener),
  };
}
