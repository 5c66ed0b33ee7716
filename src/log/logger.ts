import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { scrubSecrets } from './scrub-secrets.js';
import { redactKeys } from './redact-keys.js';

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
   * a last line of defence behind the secret-named keys (redact-keys.ts): a secret must never reach the
   * journal, even inside an error message from a library.
   */
  secrets?: () => readonly string[];
}

export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Secret-named keys are censored before serializing (redact-keys.ts says why not pino's redact).
    formatters: { level: (label) => ({ level: label }), log: redactKeys },
  };
  const secrets = setup.secrets;
  if (secrets) {
    options.hooks = {
      streamWrite: (line) => scrubSecrets(line, secrets()),
    };
  }
  const logger = setup.destination ? pino(options, setup.destination) : pino(options);
  // A child's bindings are serialized once, when it is made, without the log formatter. Children
  // inherit from their parent, so this one override covers every descendant.
  type Child = (this: Logger, bindings: Record<string, unknown>, options?: unknown) => Logger;
  const child = logger.child as unknown as Child;
  const redacting: Child = function (bindings, childOptions) {
    return child.call(this, redactKeys(bindings), childOptions);
  };
  logger.child = redacting as unknown as Logger['child'];
  return logger;
}

/** A logger that discards everything, for CLI commands that print their own output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
