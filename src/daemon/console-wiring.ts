import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log/logger.js';
import { ConfigError, describeError } from '../errors.js';
import { ENROLL_DIR_RETRY_MS } from '../enroll/retry-interval.js';
import type { ConsoleServer } from '../console/console-server.js';
import type { DaemonEnv, DaemonState } from './daemon.js';
import { buildStatus, controlHandlers } from './daemon-status.js';
import { serveEventStream } from '../events/sse.js';

// The web console, when console.listen is set. Imported lazily: with the console off, neither it
// nor sharp is loaded. A configuration mistake (unreadable certificate or credential) stops the
// start like any other config error (exit 78); a port that is taken does not stop face sync and
// uploads: the console is tried again every 30 s, and the log says why.

export interface ConsoleHandle {
  readonly url: string | undefined;
  stop(): Promise<void>;
}

export async function startConsole(
  state: DaemonState,
  d: Pick<DaemonEnv, 'pid' | 'version' | 'logger'>,
  extra: { retryMs?: number } = {},
): Promise<ConsoleHandle | undefined> {
  const cfg = state.config;
  if (cfg.console.listen.trim() === '') return undefined;
  const log: Logger = d.logger.child({ component: 'console' });
  const { createConsoleServer } = await import('../console/console-server.js');
  const control = controlHandlers(state, d);
  const stopRetry = new AbortController();
  const server: ConsoleServer = createConsoleServer({
    config: cfg,
    logger: d.logger,
    db: state.db,
    client: () => state.client,
    handlers: {
      status: () => buildStatus(state, d),
      faces: () => state.agent.listFaces(),
      // The agent of the current generation: a reload makes a new one, and so a new version.
      facesVersion: () => state.agent.facesVersion(),
      face: (faceId) => state.agent.cachedFace(faceId),
      syncFaces: () => control.syncFaces(),
      say: (body, signal) => control.say(body, signal),
      enrollVoiceprint: (body, signal) => control.enrollVoiceprint(body, signal),
    },
    // The same stream as the control socket's GET /events; stopping the console ends every stream.
    eventStream: (req, res) => serveEventStream(req, res, state.events, { signal: stopRetry.signal, onSlowClient: () => state.metrics.eventClientsDropped.inc() }),
  });
  let retrying: Promise<void> | undefined;
  try {
    await server.start();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    log.error({ err: describeError(err), retry_ms: extra.retryMs ?? ENROLL_DIR_RETRY_MS }, 'the web console could not start; the agent runs without it and tries again');
    retrying = (async () => {
      for (;;) {
        try {
          await sleep(extra.retryMs ?? ENROLL_DIR_RETRY_MS, undefined, { signal: stopRetry.signal });
          await server.start();
          return;
        } catch (e) {
          if (stopRetry.signal.aborted) return;
          log.debug({ err: describeError(e) }, 'the web console still cannot start');
        }
      }
    })();
  }
  return {
    get url() {
      return server.url;
    },
    async stop() {
      stopRetry.abort();
      await retrying;
      await server.stop();
    },
  };
}
