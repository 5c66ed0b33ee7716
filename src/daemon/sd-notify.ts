import { createRequire } from 'node:module';
import type { Logger } from '../log/logger.js';

// systemd's notify protocol is one datagram on the AF_UNIX socket named by $NOTIFY_SOCKET. Node has
// no unix datagram sockets; `unix-dgram` is a small native addon (no system library, builds in
// seconds, the choice of zigbee2mqtt). The alternatives were worse: `sd-notify` needs
// libsystemd-dev at build time, and spawning `systemd-notify` needs NotifyAccess=all and races (the
// helper may exit before systemd reads its cgroup, so the message is attributed to no unit).

interface DgramSocket {
  send(buf: Buffer, offset: number, length: number, path: string, cb: (err?: Error) => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
  close(): void;
}
interface UnixDgramModule {
  createSocket(type: 'unix_dgram'): DgramSocket;
}

export interface Notifier {
  /** True when a NOTIFY_SOCKET was given and can be used. */
  readonly enabled: boolean;
  /** Sends `KEY=value` lines; never throws (systemd being gone must not stop the agent). */
  notify(fields: Record<string, string | number>): Promise<void>;
  close(): void;
}

export interface NotifierOptions {
  /** $NOTIFY_SOCKET; undefined or empty when not started by systemd with Type=notify. */
  socketPath: string | undefined;
  logger: Logger;
}

export function createNotifier(options: NotifierOptions): Notifier {
  const { socketPath, logger } = options;
  if (!socketPath) return disabledNotifier();
  if (socketPath.startsWith('@')) {
    // unix-dgram copies the path with strncpy, so the abstract namespace cannot be addressed.
    logger.warn({ notify_socket: socketPath }, 'NOTIFY_SOCKET is in the abstract namespace, which this build cannot address; readiness and watchdog messages are not sent');
    return disabledNotifier();
  }
  let socket: DgramSocket | undefined;
  try {
    const require = createRequire(import.meta.url);
    const mod = require('unix-dgram') as UnixDgramModule;
    socket = mod.createSocket('unix_dgram');
    socket.on('error', (err) => logger.warn({ err: err.message }, 'sd_notify socket error'));
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'cannot load unix-dgram; systemd notifications are disabled (reinstall with npm ci)');
    return disabledNotifier();
  }
  let warned = false;
  return {
    enabled: true,
    notify(fields) {
      const text = Object.entries(fields).map(([k, v]) => `${k}=${String(v).replace(/\n/g, ' ')}`).join('\n');
      const buf = Buffer.from(text);
      return new Promise((resolve) => {
        if (!socket) return resolve();
        socket.send(buf, 0, buf.length, socketPath, (err) => {
          if (err && !warned) {
            warned = true;
            logger.warn({ err: err.message, notify_socket: socketPath }, 'cannot send to NOTIFY_SOCKET; is systemd still running?');
          }
          resolve();
        });
      });
    },
    close() {
      try {
        socket?.close();
      } catch {
        // already closed
      }
      socket = undefined;
    },
  };
}

function disabledNotifier(): Notifier {
  return { enabled: false, notify: async () => {}, close() {} };
}

/** The watchdog period systemd expects (WATCHDOG_USEC), if it is meant for this process. */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv, pid: number): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isFinite(usec) || usec <= 0) return undefined;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return Math.floor(usec / 1000);
}
