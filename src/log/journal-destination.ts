import { createRequire } from 'node:module';
import { existsSync, fstatSync } from 'node:fs';
import { isatty } from 'node:tty';
import { encodeJournalEntry, journalFields, syslogPrefixedLine } from './journal-format.js';

// Where the daemon's log goes under systemd. JSON lines on stdout reach the journal as one string
// at priority 6: `journalctl -p warning` finds nothing and no field can be matched. Sent over the
// journal's native socket instead, each entry has its PRIORITY, a MESSAGE sentence, and its fields
// (COMPONENT=, CODE=, FACE_ID=, FILE=...). The sending is synchronous (sendto on a datagram
// socket), so entries keep their order and a fatal line is out before the process exits.

export const JOURNAL_SOCKET = '/run/systemd/journal/socket';

export type LogFormat = 'auto' | 'json' | 'journal';

interface DgramSocket {
  send(buf: Buffer, offset: number, length: number, path: string, cb: (err?: Error) => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
  close(): void;
}

export interface JournalDestination {
  write(line: string): void;
  /** 'native' while entries go to the socket; 'stream' after falling back to <N> lines. */
  mode(): 'native' | 'stream';
  close(): void;
}

export interface JournalDestinationOptions {
  /** The journal's native socket; <N>-prefixed lines on `fallback` when absent or unusable. */
  socketPath: string | undefined;
  fallback: { write(text: string): unknown };
  identifier?: string;
}

export function createJournalDestination(o: JournalDestinationOptions): JournalDestination {
  let socket: DgramSocket | undefined;
  if (o.socketPath) {
    try {
      const require = createRequire(import.meta.url);
      socket = (require('unix-dgram') as { createSocket(t: 'unix_dgram'): DgramSocket }).createSocket('unix_dgram');
      socket.on('error', () => {});
    } catch {
      socket = undefined;
    }
  }
  let native = socket !== undefined;
  return {
    write(line) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        o.fallback.write(line.endsWith('\n') ? line : `${line}\n`);
        return;
      }
      const fields = journalFields(record, o.identifier);
      if (socket && o.socketPath) {
        const buf = encodeJournalEntry(fields);
        let failed: Error | undefined;
        socket.send(buf, 0, buf.length, o.socketPath, (err) => {
          failed = err;
        });
        if (!failed) {
          native = true;
          return;
        }
        // journald gone, restarting, or behind (EAGAIN): this entry goes to the stdout stream,
        // which journald also reads; the next entry tries the socket again.
        native = false;
      }
      o.fallback.write(syslogPrefixedLine(fields));
    },
    mode: () => (native ? 'native' : 'stream'),
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

/**
 * Whether the daemon logs to the journal, and through which socket. `auto`: when systemd connected
 * stdout to the journal (JOURNAL_STREAM names stdout's device:inode), or runs us as a service
 * (INVOCATION_ID) with stdout elsewhere and the journal socket present. A terminal, a pipe or a
 * file otherwise gets the JSON lines as before.
 */
export function journalTarget(format: LogFormat, env: NodeJS.ProcessEnv, stdoutFd: number | undefined): { socketPath: string | undefined } | undefined {
  if (format === 'json') return undefined;
  const socketPath = env.TERMINAL_AGENT_JOURNAL_SOCKET || JOURNAL_SOCKET;
  const usable = existsSync(socketPath) ? socketPath : undefined;
  if (format === 'journal') return { socketPath: usable };
  if (stdoutIsJournal(env.JOURNAL_STREAM, stdoutFd)) return { socketPath: usable };
  if (env.INVOCATION_ID && usable && !stdoutIsTty(stdoutFd)) return { socketPath: usable };
  return undefined;
}

export function stdoutIsJournal(journalStream: string | undefined, fd: number | undefined): boolean {
  if (!journalStream || fd === undefined) return false;
  const [dev, ino] = journalStream.split(':');
  try {
    const st = fstatSync(fd, { bigint: true });
    return String(st.dev) === dev && String(st.ino) === ino;
  } catch {
    return false;
  }
}

// A terminal, not any character device: /dev/null is one too, and a unit with StandardOutput=null
// (stdout on /dev/null, INVOCATION_ID set) had every line written there instead of the journal.
function stdoutIsTty(fd: number | undefined): boolean {
  return fd !== undefined && isatty(fd);
}
