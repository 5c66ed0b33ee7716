#!/usr/bin/env node
// The only place that reads process.argv/env, installs signal handlers and exits.
import { loadAllCommands } from './cli/commands.js';
import { readCommandIndex } from './cli/command-index.js';
import { runCli } from './cli/run-cli.js';
import type { CliContext } from './cli/command.js';
import { packageVersion } from './version.js';
import { escapeControls } from './util/terminal-text.js';

async function main(): Promise<void> {
  // Writing to a closed pipe (`terminal-agent faces list | head`) must not crash with EPIPE: the
  // output is not wanted any more, as with SIGPIPE.
  let stdoutReady = false;
  const stdout = () => {
    if (!stdoutReady) {
      stdoutReady = true;
      process.stdout.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EPIPE') process.exit(0);
      });
    }
    return process.stdout;
  };
  // The AbortController is made when a command asks for the signal (about 0.5 ms to load), or
  // when a signal comes first.
  let shutdown: AbortController | undefined;
  const shutdownController = () => (shutdown ??= new AbortController());
  const reloadListeners = new Set<() => void>();
  const fatalListeners = new Set<(err: unknown, origin: string) => void>();
  // With --json every stderr line is a JSON object (cli/output.ts), these last words too; the
  // same early look as run-cli.ts takes before its parse, as they may come before it.
  const json = process.argv.includes('--json');
  const lastWords = (text: string, code: string, extra: Record<string, unknown> = {}) => {
    // The text line goes to a terminal: an error's message may carry text from outside (a face
    // name, the service's words), escaped like every other message shown there.
    process.stderr.write(json ? `${JSON.stringify({ error: text, code, ...extra })}\n` : `terminal-agent: ${escapeControls(text, true)}\n`);
  };
  let signals = 0;
  const onStop = (sig: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      // A second signal means the operator (or systemd) will not wait: leave now.
      lastWords(`second ${sig}, exiting at once`, 'TA_ERR_ABORTED');
      process.exit(130);
    }
    shutdownController().abort(new Error(sig));
  };
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', () => {
    for (const l of reloadListeners) l();
  });
  // A bug (an unhandled 'error' event, a rejected promise nobody awaited) leaves the process in an
  // unknown state: say so in the log, then exit 1 so systemd's Restart=always starts afresh.
  const onUncaught = (err: unknown, origin: string) => {
    // The daemon's listener logs through its logger, which scrubs the secrets; the raw stderr line
    // is only for commands without one (and if that logging itself failed).
    let logged = fatalListeners.size > 0;
    for (const l of fatalListeners) {
      try {
        l(err, origin);
      } catch {
        logged = false;
      }
    }
    if (!logged) {
      // The text line is the stack itself; a JSON line keeps it in a field of its own.
      const message = err instanceof Error ? err.message : String(err);
      const stack = err instanceof Error ? err.stack : undefined;
      lastWords(`exiting on an uncaught error (${origin}): ${json ? message : stack ?? message}`, 'TA_ERR_INTERNAL', { stack });
    }
    process.exit(1);
  };
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', (reason) => onUncaught(reason, 'unhandledRejection'));

  const ctx: CliContext = {
    env: process.env,
    cwd: process.cwd(),
    io: {
      get stdout() {
        return stdout();
      },
      get stderr() {
        return process.stderr;
      },
      // Read when a command reads stdin: process.stdin's first access builds a stream (with
      // fs/promises and readline for a file), a cost no other command should pay.
      get stdin() {
        return process.stdin;
      },
    },
    version: packageVersion(),
    get shutdown() {
      return shutdownController().signal;
    },
    onReload(listener) {
      reloadListeners.add(listener);
      return () => reloadListeners.delete(listener);
    },
    onFatal(listener) {
      fatalListeners.add(listener);
      return () => fatalListeners.delete(listener);
    },
  };
  // The bundle's command index (scripts/bundle.mjs) spares every call the import of every command.
  const commands = readCommandIndex(`${import.meta.dirname}/bundle/commands.idx`) ?? await loadAllCommands();
  const code = await runCli(commands, process.argv.slice(2), ctx);
  process.exitCode = code;
  // Long-running commands have closed their handles; anything left (a stuck socket) must not keep
  // a finished CLI alive. A finished exchange with the daemon leaves its socket, closed on the next
  // turn of the loop: exiting now loses nothing once no text waits in stdout's or stderr's queue
  // (a slow reader of a pipe) and nothing but sockets is left (no child, timer or file request).
  // The last resort is armed even when nothing shows: a native addon's handle (the journal's
  // datagram socket, unix-dgram) keeps the loop alive without being listed.
  setTimeout(() => process.exit(code), 2000).unref();
  const left = process.getActiveResourcesInfo();
  if (left.length === 0) return;
  const flushed = (!stdoutReady || process.stdout.writableLength === 0) && process.stderr.writableLength === 0;
  if (flushed && left.every((r) => r === 'PipeWrap' || r === 'TTYWrap' || r === 'Immediate')) process.exit(code);
}

void main();
