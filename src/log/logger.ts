import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { scrubSecrets } from './scrub-secrets.js';

export type { Logger } from 'pino';
export { scrubSecrets } from './scrub-secrets.js';

export interface LoggerSetup {
  level?: string;
  /**
   * Where JSON lines go. When absent, stdout through pino's own SonicBoom, which writes
   * asynchronously (lines wait in memory while a write is under way) and flushes at exit.
   */
  destination?: DestinationStream;
  /**
   * Returns the secret values currently in use. Any occurrence in a finished log line is replaced,
   * a last line of defence behind the secret-named keys (REDACT_PATHS): a secret must never reach the
   * journal, even inside an error message from a library.
   */
  secrets?: () => readonly string[];
}

/** Secret-named keys, censored wherever a log call or a child's bindings carry them. */
const REDACT_PATHS = [
  'terminal_secret', 'api_key', 'authorization', 'Authorization', 'secret', 'password', 'token',
  '*.terminal_secret', '*.api_key', '*.authorization', '*.Authorization', '*.secret', '*.token',
  'headers.authorization', 'req.headers.authorization', '*.headers.authorization',
];

export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    formatters: { level: (label) => ({ level: label }) },
  };
  const secrets = setup.secrets;
  if (secrets) {
    options.hooks = {
      streamWrite: (line) => scrubSecrets(line, secrets()),
    };
  }
  return setup.destination ? pino(options, setup.destination) : pino(options);
}

/** A logger that discards everything, for CLI commands that print their own output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
