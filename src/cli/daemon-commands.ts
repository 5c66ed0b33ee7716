import { boolOpt, stringOpt, type CommandSpec } from './command.js';
import { UsageError } from '../errors.js';
import { writeJson, writeLine } from './output.js';
import { loadLocalConfig } from './local-config.js';
import { controlSocketOf } from '../config/control-socket.js';
import { connectControl, controlClient, DaemonNotRunningError } from '../control/control-client.js';
import { formatStatus } from '../daemon/status-format.js';

// Each command imports what it runs when it runs: `status` and `--help` must not load the daemon,
// and `run` must not carry doctor or demo (tls, dns, the whole emulator) in its resident memory.
// The control client and the socket's path are small and imported here: `status` is the command
// that must start fastest, and each lazy import is one more file to read.

export const daemonCommands: CommandSpec[] = [
  {
    path: ['run'],
    summary: 'the daemon (what systemd starts): face sync, enrollment folders, speech, control socket',
    description: `Runs until SIGTERM/SIGINT (drains in-flight work, exits 0); SIGHUP reloads the config.
With $NOTIFY_SOCKET (systemd Type=notify) it reports READY=1, STATUS= and feeds the watchdog.
Logs go to the journal with priorities and fields under systemd (log.format), else JSON lines on stdout.`,
    async run(args, ctx) {
      const [{ loadDaemonConfig, makeDaemonEnv }, { runDaemon }] = await Promise.all([
        import('./daemon-env.js'),
        import('../daemon/daemon.js'),
      ]);
      const config = await loadDaemonConfig(ctx, args.global.configPath);
      const d = makeDaemonEnv(ctx, { configPath: args.global.configPath, config });
      return runDaemon(d, config, ctx.shutdown);
    },
  },
  {
    path: ['demo'],
    summary: 'starts the emulator and the daemon together in ./demo/ with a generated config, prints what to try',
    description: 'Everything lives in ./demo/ (config, state, enrollment folders, logs). Ctrl-C stops both.',
    async run(_args, ctx) {
      const { runDemo } = await import('./demo.js');
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
      const rawInterval = stringOpt(args, 'interval');
      if (rawInterval !== undefined && !boolOpt(args, 'watch')) throw new UsageError('--interval goes with --watch');
      if (boolOpt(args, 'watch')) {
        const seconds = rawInterval === undefined ? 2 : Number(rawInterval);
        if (!/^\d+(\.\d+)?$/.test(rawInterval ?? '2') || seconds < 0.5 || seconds > 3600) throw new UsageError(`--interval ${JSON.stringify(rawInterval)}: give seconds from 0.5 to 3600 (e.g. 2)`);
        const config = await loadLocalConfig(args, ctx);
        const { watchStatus } = await import('./status-watch.js');
        return watchStatus(ctx, config.control.socket, args.global.json, seconds * 1000);
      }
      // A running daemon is asked at the socket the config file names, without validating the
      // whole config (zod, secrets): that is most of this command's cost, and `config check` is
      // there for it. One connection, no probe first. No daemon there (or no usable path): the
      // full load reports what is wrong.
      const socket = await controlSocketOf(args.global.configPath, ctx.cwd);
      const asked = socket ? await controlClient(socket, { timeoutMs: 10_000 }).status().catch((err: unknown) => {
        if (err instanceof DaemonNotRunningError) return undefined;
        throw err;
      }) : undefined;
      const status = asked ?? await (await connectControl((await loadLocalConfig(args, ctx)).control.socket, { timeoutMs: 10_000 })).status();
      if (args.global.json) writeJson(ctx, status);
      else writeLine(ctx, formatStatus(status));
    },
  },
  {
    path: ['doctor'],
    summary: 'checks config, both base URLs (DNS, TLS, credentials), folders, audio output and input; one line each',
    async run(args, ctx) {
      const { runDoctor } = await import('./doctor.js');
      return runDoctor(ctx, args.global.configPath, args.global.json);
    },
  },
];
