import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';

// syncfs(2) of the file system holding a folder, without forking the daemon for each call. Node
// has no binding for it, and `sync --file-system DIR` (coreutils) run by execFile cost about 4 ms
// of the daemon's CPU per call (the fork copies the page tables of a ~90 MB process) and 3.5 ms
// in the child; an enrollment burst of a thousand files made about two dozen of them. Here one
// small helper process serves every folder (the face cache and the enrollment folders, each burst
// needs both): the daemon writes the folder as one line per call and reads one answer ("0" done,
// anything else failed). The helper is perl (perl-base is Essential in Debian and Raspberry Pi
// OS), which makes the system call itself: about 0.07 ms of CPU per call, against 1.1 to 1.2 ms
// for a shell that runs `sync` for each (a fork and an exec per call; test/bench/syncfs.mjs).
// Where perl or the call's number is missing, that shell is the helper. It ends when its stdin
// closes: after IDLE_MS without a call, at close(), or when the daemon dies (the pipe closes with
// it), so none outlives the daemon.
//
// Calls for a folder that arrive while its sync runs share the next one for it: a syncfs that
// starts after a caller's writes covers them, one already running may not. One sync runs at a
// time; folders waiting take turns in the order they were first asked for.

/** A helper with nothing to do ends after this long. */
const IDLE_MS = 10_000;
/** The shell's loop, where perl cannot serve. */
const SHELL_SCRIPT = 'while IFS= read -r d; do sync --file-system -- "$d" && echo 0 || echo 1; done';
/**
 * perl's loop: open the folder, syscall(syncfs, its fd). `$0` names it in `ps`. Run with an empty
 * environment: no PERL5OPT or PERL5LIB of the daemon's can change what it does.
 */
const PERL_SCRIPT = '$0 = "terminal-agent syncfs"; $| = 1; my $nr = shift; while (defined(my $d = <STDIN>)) { chomp $d; my $ok = 0; '
  + 'if (open(my $fh, "<", $d)) { $ok = syscall($nr, fileno($fh)) == 0; close $fh; } print $ok ? "0\n" : "1\n"; }';
/** syncfs's number by Node's process.arch (the kernel's syscall tables; they never change). */
const SYNCFS_NR: Readonly<Record<string, number>> = { x64: 306, arm64: 267, arm: 373, riscv64: 267 };

export interface SyncfsRunnerOptions {
  /** perl's path; where it is missing, the shell serves. */
  perl?: string;
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

interface Helper {
  child: ChildProcess;
  /** The folder whose sync is running, and who waits for its answer. */
  current: { dir: string; waiters: Waiter[] } | undefined;
  /** Per folder, calls that arrived while a sync ran: served by the next sync of that folder. */
  next: Map<string, Waiter[]>;
  out: string;
  idle: NodeJS.Timeout | undefined;
}

export interface SyncfsRunner {
  /** Resolves once a syncfs of `dir`'s file system that started after this call has finished. */
  run(dir: string, signal: AbortSignal, timeoutMs: number): Promise<void>;
  /** Ends the helper (calls waiting fail). */
  close(): void;
}

export function createSyncfsRunner(options: SyncfsRunnerOptions = {}): SyncfsRunner {
  let helper: Helper | undefined;
  const perl = options.perl ?? '/usr/bin/perl';
  const nr = SYNCFS_NR[process.arch];
  // A perl that is there but cannot serve (a broken install: it did not start, or exited with an
  // error before its first answer) would be spawned and fail at every call: the shell serves then.
  let perlUnusable = false;

  function fail(h: Helper, err: Error): void {
    if (helper === h) helper = undefined;
    clearTimeout(h.idle);
    const waiting = [...(h.current?.waiters ?? []), ...[...h.next.values()].flat()];
    h.current = undefined;
    h.next.clear();
    h.child.stdin?.destroy();
    h.child.kill('SIGKILL');
    for (const w of waiting) w.reject(err);
  }

  function pump(h: Helper): void {
    if (h.current) return;
    const first = h.next.entries().next();
    if (first.done) return;
    const [dir, waiters] = first.value;
    h.next.delete(dir);
    clearTimeout(h.idle);
    h.current = { dir, waiters };
    h.child.stdin!.write(`${dir}\n`);
  }

  function answered(h: Helper, line: string): void {
    const done = h.current;
    h.current = undefined;
    for (const w of done?.waiters ?? []) {
      if (line === '0') w.resolve();
      else w.reject(new Error(`syncfs of '${done!.dir}' failed`));
    }
    pump(h);
    if (!h.current) h.idle = setTimeout(() => close(h), IDLE_MS).unref();
  }

  function close(h: Helper): void {
    if (helper === h) helper = undefined;
    h.child.stdin?.end();
  }

  function start(): Helper {
    const isPerl = !perlUnusable && nr !== undefined && existsSync(perl);
    const child = isPerl
      ? spawn(perl, ['-e', PERL_SCRIPT, String(nr)], { stdio: ['pipe', 'pipe', 'ignore'], env: {} })
      : spawn('/bin/sh', ['-c', SHELL_SCRIPT, 'syncfs'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const h: Helper = { child, current: undefined, next: new Map(), out: '', idle: undefined };
    let heard = false;
    // Never what keeps the daemon's event loop alive: a stop does not wait for the idle timeout.
    child.unref();
    (child.stdin as unknown as { unref?(): void }).unref?.();
    (child.stdout as unknown as { unref?(): void }).unref?.();
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      heard = true;
      h.out += chunk;
      for (let nl = h.out.indexOf('\n'); nl >= 0; nl = h.out.indexOf('\n')) {
        const line = h.out.slice(0, nl).trim();
        h.out = h.out.slice(nl + 1);
        answered(h, line);
      }
    });
    // A helper that could not start, or is gone before its first answer (which may show first as
    // EPIPE on the line it was sent, before its exit is seen): either way perl did not serve.
    const broke = (err: Error) => {
      if (isPerl && !heard) perlUnusable = true;
      fail(h, err);
    };
    child.stdin!.on('error', broke);
    child.on('error', broke);
    child.on('exit', (code, sig) => {
      if (isPerl && !heard && code !== null && code !== 0) perlUnusable = true;
      fail(h, new Error(`the syncfs helper ended (${sig ?? code})`));
    });
    return h;
  }

  return {
    run(dir: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
      if (signal.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      // One line per folder: a name with a line break cannot be passed (the caller falls back to fdatasync).
      if (dir.includes('\n')) return Promise.reject(new Error(`syncfs cannot be asked for a folder whose name holds a line break: ${JSON.stringify(dir)}`));
      const h = (helper ??= start());
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          settle();
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        };
        // A sync stuck that long (a dead disk): the helper is given up, the next call starts another.
        const timer = setTimeout(() => fail(h, new Error(`syncfs of '${dir}' took over ${timeoutMs} ms`)), timeoutMs);
        const settle = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        const waiters = h.next.get(dir) ?? [];
        h.next.set(dir, waiters);
        waiters.push({
          resolve: () => {
            settle();
            resolve();
          },
          reject: (err) => {
            settle();
            reject(err);
          },
        });
        pump(h);
      });
    },
    close(): void {
      if (helper) close(helper);
    },
  };
}
