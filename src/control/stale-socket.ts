import { lstat, unlink } from 'node:fs/promises';
import type { Logger } from '../log/logger.js';
import { AlreadyRunningError, UsageError } from '../errors.js';
import { daemonAnswers } from './control-client.js';

/**
 * A socket file left by a crash would make listen() fail with EADDRINUSE. Connect first: if someone
 * answers, another daemon owns it and we must not steal it; if not, it is stale and is replaced.
 */
export async function removeStaleSocket(path: string, logger: Logger): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch {
    return;
  }
  if (!st.isSocket()) {
    throw new UsageError(`control.socket ${path} exists and is not a socket; remove it or choose another path`);
  }
  if (await daemonAnswers(path)) {
    throw new AlreadyRunningError(`another terminal-agent is already answering on the control socket ${path}; stop it first (systemctl stop terminal-agent), or set a different control.socket`, { details: { socket: path } });
  }
  logger.warn({ socket: path }, 'replacing a stale control socket left by a previous run');
  await unlink(path);
}
