import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { scrubSecrets } from './scrub-secrets.js';
import { isoTime } from '../util/iso-time.js';

export type { Logger } from 'pino';
export { scrubSecrets } from './scrub-secrets.js';

export interface LoggerSetup {
  level?: string;
  /** Where JSON lines go; stdout (synchronous) when absent. */
  destination?: DestinationStream;
  /**
   * Returns the secret values currently in use. Any occurrence in a finished log line is replaced,
   * a last line of defence behind the key-based `redact` paths: a secret must never reach the
   * journal, even inside an error message from a library.
   */
  secrets?: () => readonly string[];
}

const REDACT_PATHS = [
  'terminal_secret', 'api_key', 'authorization', 'Authorization', 'secret', 'password', 'token',
  '*.terminal_secret', '*.api_key', '*.authorization', '*.Authorization', '*.secret', '*.token',
  'headers.authorization', 'req.headers.authorization', '*.headers.authorization',
];

export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? 'info',
    base: { pid: process.pid },
    // pino.stdTimeFunctions.isoTime's form, without Date's toISOString (util/iso-time.ts says why).
    timestamp: () => `,"time":"${isoTime()}"`,
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
