import { spawn, type ChildProcess } from 'node:child_process';

// syncfs(2) of the file system holding a folder, without forking the daemon for each call. Node
// has no binding for it, and `sync --file-system DIR` (coreutils) run by execFile cost about 4 ms
// of the daemon's CPU per call (the fork copies the page tables of a ~90 MB process) and 3.5 ms
// in the child; an enrollment burst of a thousand files made about two dozen of them. Here a small
// shell per folder runs `sync` instead: the daemon writes one line per call and reads one answer
// ("0" done, anything else failed), and the forks are the shell's (about 1 ms each in all). The
// shell ends when its stdin closes: after IDLE_MS without a call, at close(), or when the daemon
// dies (the pipe closes with it), so none outlives the daemon.
//
// Calls that arrive while one runs share the next one: a syncfs that starts after a caller's
// writes covers them, one already running may not.

/** A helper shell with nothing to do ends after this long. */
const IDLE_MS = 10_000;
const SCRIPT = 'while read -r _; do sync --file-system -- "$1" && echo 0 || echo 1; done';

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

interface Helper {
  child: ChildProcess;
  /** Waiting for the answer of the call that is running. */
  current: Waiter[] | undefined;
  /** Arrived while it ran: served by the next call. */
  next: Waiter[];
  out: string;
  idle: NodeJS.Timeout | undefined;
}

export interface SyncfsRunner {
  /** Resolves once a syncfs of `dir`'s file system that started after this call has finished. */
  run(dir: string, signal: AbortSignal, timeoutMs: number): Promise<void>;
  /** Ends the helper shells (calls waiting fail). */
  close(): void;
}

export function createSyncfsRunner(): SyncfsRunner {
  const helpers = new Map<string, Helper>();

  function fail(dir: string, h: Helper, err: Error): void {
    if (helpers.get(dir) === h) helpers.delete(dir);
    clearTimeout(h.idle);
    const waiting = [...(h.current ?? []), ...h.next];
    h.current = undefined;
    h.next = [];
    h.child.stdin?.destroy();
    h.child.kill('SIGKILL');
    for (const w of waiting) w.reject(err);
  }

  function pump(dir: string, h: Helper): void {
    if (h.current || h.next.length === 0) return;
    clearTimeout(h.idle);
    h.current = h.next;
    h.next = [];
    h.child.stdin!.write('\n');
  }

  function answered(dir: string, h: Helper, line: string): void {
    const done = h.current ?? [];
    h.current = undefined;
    for (const w of done) {
      if (line === '0') w.resolve();
      else w.reject(new Error(`'sync --file-system ${dir}' failed`));
    }
    pump(dir, h);
    if (!h.current) h.idle = setTimeout(() => close(dir, h), IDLE_MS).unref();
  }

  function close(dir: string, h: Helper): void {
    if (helpers.get(dir) === h) helpers.delete(dir);
    h.child.stdin?.end();
  }

  function helperFor(dir: string): Helper {
    const known = helpers.get(dir);
    if (known) return known;
    const child = spawn('/bin/sh', ['-c', SCRIPT, 'syncfs', dir], { stdio: ['pipe', 'pipe', 'ignore'] });
    const h: Helper = { child, current: undefined, next: [], out: '', idle: undefined };
    helpers.set(dir, h);
    // Never what keeps the daemon's event loop alive: a stop does not wait for the idle timeout.
    child.unref();
    (child.stdin as unknown as { unref?(): void }).unref?.();
    (child.stdout as unknown as { unref?(): void }).unref?.();
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      h.out += chunk;
      for (let nl = h.out.indexOf('\n'); nl >= 0; nl = h.out.indexOf('\n')) {
        const line = h.out.slice(0, nl).trim();
        h.out = h.out.slice(nl + 1);
        answered(dir, h, line);
      }
    });
    child.stdin!.on('error', (err: Error) => fail(dir, h, err));
    child.on('error', (err: Error) => fail(dir, h, err));
    child.on('exit', (code, sig) => fail(dir, h, new Error(`the syncfs helper for ${dir} ended (${sig ?? code})`)));
    return h;
  }

  return {
    run(dir: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
      if (signal.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      const h = helperFor(dir);
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          settle();
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        };
        // A sync stuck that long (a dead disk): this helper is given up, the next call starts another.
        const timer = setTimeout(() => fail(dir, h, new Error(`'sync --file-system ${dir}' took over ${timeoutMs} ms`)), timeoutMs);
        const settle = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        h.next.push({
          resolve: () => {
            settle();
            resolve();
          },
          reject: (err) => {
            settle();
            reject(err);
          },
        });
        pump(dir, h);
      });
    },
    close(): void {
      for (const [dir, h] of [...helpers]) close(dir, h);
    },
  };
}
