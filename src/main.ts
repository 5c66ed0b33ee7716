#!/usr/bin/env node
// The only place that reads process.argv/env, installs signal handlers and exits.
import { COMMANDS } from './cli/commands.js';
import { runCli } from './cli/run-cli.js';
import type { CliContext } from './cli/command.js';
import { packageVersion } from './version.js';

async function main(): Promise<void> {
  const shutdown = new AbortController();
  const reloadListeners = new Set<() => void>();
  let signals = 0;
  const onStop = (sig: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      // A second signal means the operator (or systemd) will not wait: leave now.
      process.stderr.write(`terminal-agent: second ${sig}, exiting at once\n`);
      process.exit(130);
    }
    shutdown.abort(new Error(sig));
  };
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', () => {
    for (const l of reloadListeners) l();
  });
  // Writing to a closed pipe (`terminal-agent faces list | head`) must not crash with EPIPE.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
  });

  const ctx: CliContext = {
    env: process.env,
    cwd: process.cwd(),
    io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
    version: packageVersion(),
    shutdown: shutdown.signal,
    onReload(listener) {
      reloadListeners.add(listener);
      return () => reloadListeners.delete(listener);
    },
  };
  const code = await runCli(COMMANDS, process.argv.slice(2), ctx);
  process.exitCode = code;
  // Long-running commands have closed their handles; anything left (a stuck socket) must not keep
  // a finished CLI alive.
  setTimeout(() => process.exit(code), 2000).unref();
}

void main();
