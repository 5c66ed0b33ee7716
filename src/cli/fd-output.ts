import { writeSync } from 'node:fs';
import type { Writable } from 'node:stream';

// The CLI's text output, written straight to file descriptors 1 and 2. process.stdout is a stream
// built on first use (node:stream, and a net.Socket or tty for a pipe or terminal): about 3 ms
// of a local command's start, on a Pi several times that, for a few lines of text. On Linux that
// stream writes synchronously to files, pipes and terminals anyway, so writing with writeSync
// keeps the same order and the same bytes.
//
// A descriptor in non-blocking mode (a pipe shared with a program that set O_NONBLOCK, or one
// that process.stdout itself has opened) answers EAGAIN when the reader is slow. From then on
// that descriptor's text goes through its stream, whose queue waits for the reader: the rest of
// the text keeps its order, and nothing is busy-waited or dropped.

export type OutFd = 1 | 2;

export interface FdOutputOptions {
  /** The stream of each descriptor (process.stdout / process.stderr), built only when needed. */
  stream(fd: OutFd): Writable;
  /** The reader of fd 1 went away (EPIPE: `terminal-agent faces list | head -1`). */
  onBrokenPipe(): void;
  /** The system call, for tests; default fs.writeSync. */
  write?: (fd: number, text: string | Uint8Array) => number;
}

export interface FdOutput {
  write(fd: OutFd, text: string): void;
  /** Everything later written to `fd` goes through its stream (a caller now uses the stream itself). */
  useStream(fd: OutFd): void;
}

export function createFdOutput(options: FdOutputOptions): FdOutput {
  const write = options.write ?? ((fd: number, data: string | Uint8Array) => (typeof data === 'string' ? writeSync(fd, data) : writeSync(fd, data)));
  // Where each descriptor's text goes now: straight to it, through its stream, or nowhere.
  const route = new Map<OutFd, 'fd' | 'stream' | 'closed'>();

  return {
    write(fd, text) {
      const to = route.get(fd) ?? 'fd';
      if (to === 'closed') return;
      if (to === 'stream') {
        options.stream(fd).write(text);
        return;
      }
      // writeSync may write part of it (a pipe with less room than the text): go on from there.
      let rest: Buffer | undefined;
      try {
        const done = write(fd, text);
        if (done === Buffer.byteLength(text)) return;
        rest = Buffer.from(text).subarray(done);
        while (rest.length > 0) rest = rest.subarray(write(fd, rest));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') {
          // Nobody reads it any more. On stdout the output is not wanted (as with SIGPIPE); lines
          // for a closed stderr have nowhere to go.
          route.set(fd, 'closed');
          if (fd === 1) options.onBrokenPipe();
          return;
        }
        if (code !== 'EAGAIN') throw err;
        route.set(fd, 'stream');
        options.stream(fd).write(rest ?? text);
      }
    },
    useStream(fd) {
      if (route.get(fd) !== 'closed') route.set(fd, 'stream');
    },
  };
}
