import { boolOpt, stringOpt, type CommandSpec } from './command.js';
import { UsageError } from '../errors.js';
import { writeJson, writeLine } from './output.js';
import { loadConfig } from '../config/load-config.js';
import { loadLocalConfig } from './api-client.js';
import { connectControl } from '../control/control-client.js';
import { makeDaemonEnv } from '../daemon/daemon-env.js';
import { runDaemon } from '../daemon/daemon.js';

// doctor and demo load what `run` never needs (tls, dns, the whole emulator): imported on use, so
// the daemon's resident memory does not carry them.

export const daemonCommands: CommandSpec[] = [
  {
    path: ['run'],
    summary: 'the daemon (what systemd starts): face sync, enrollment folders, speech, control socket',
    description: `Runs until SIGTERM/SIGINT (drains in-flight work, exits 0); SIGHUP reloads the config.
With $NOTIFY_SOCKET (systemd Type=notify) it reports READY=1, STATUS= and feeds the watchdog.
Logs go to the journal with priorities and fields under systemd (log.format), else JSON lines on stdout.`,
    async run(args, ctx) {
      const config = await loadConfig({ path: args.global.configPath, env: ctx.env, cwd: ctx.cwd });
      const d = makeDaemonEnv(ctx, { configPath: args.global.configPath, config });
      return runDaemon(d, config, ctx.shutdown);
    },
  },
  {
    path: ['demo'],
    summary: 'starts the emulator and the daemon together in ./demo/ with a generated config, prints what to try',
    description: 'Everything lives in ./demo/ (config, state, enrollment folders, logs). Ctrl-C stops both.',
    async run(_args, ctx) {
      const { runDemo } = await import('../daemon/demo.js');
      return runDemo(ctx);
    },
  },
  {
    path: ['status'],
    summary: 'asks the running daemon: uptime, last face sync, outbox per kind, recent failures, audio state',
    options: {
      watch: { type: 'boolean', description: 'redraw the status every --interval and when the daemon reports something, until Ctrl-C' },
      interval: { type: 'string', description: 'seconds between redraws with --watch (default 2)', valueName: 'S' },
    },
    async run(args, ctx) {
      const config = await loadLocalConfig(args, ctx);
      const rawInterval = stringOpt(args, 'interval');
      if (rawInterval !== undefined && !boolOpt(args, 'watch')) throw new UsageError('--interval goes with --watch');
      if (boolOpt(args, 'watch')) {
        const seconds = rawInterval === undefined ? 2 : Number(rawInterval);
        if (!/^\d+(\.\d+)?$/.test(rawInterval ?? '2') || seconds < 0.5 || seconds > 3600) throw new UsageError(`--interval ${JSON.stringify(rawInterval)}: give seconds from 0.5 to 3600 (e.g. 2)`);
        const { watchStatus } = await import('./status-watch.js');
        return watchStatus(ctx, config.control.socket, args.global.json, seconds * 1000);
      }
      const control = await connectControl(config.control.socket, { timeoutMs: 10_000 });
      const status = await control.status();
      if (args.global.json) writeJson(ctx, status);
      else writeLine(ctx, (await import('../daemon/status-format.js')).formatStatus(status));
    },
  },
  {
    path: ['doctor'],
    summary: 'checks config, both base URLs (DNS, TLS, credentials), folders, audio output and input; one line each',
    async run(args, ctx) {
      const { runDoctor } = await import('../daemon/doctor.js');
      return runDoctor(ctx, args.global.configPath, args.global.json);
    },
  },
];
