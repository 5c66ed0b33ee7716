// `terminal-agent config check`: validates the config file and prints every problem with
// file:line (exit 78), or a short secret-free summary.
import type { CliContext, CommandSpec } from './command.js';
import { writeErr, writeJson, writeLine } from './output.js';
import { ConfigError, ExitCode, formatProblem, type ConfigProblem } from '../errors.js';
import { namedFileProblems } from '../config/named-files.js';
import type { LoadedConfig } from '../config/load-config.js';
import { formatDuration, formatSize } from '../util/units.js';

function describeSecret(s: LoadedConfig['secrets']['terminal_secret']): string {
  switch (s.source) {
    case 'env':
      return `set (from $${s.origin})`;
    case 'credentials':
      return `set (systemd credential ${s.origin})`;
    case 'file':
      return `set (from file ${s.origin})`;
    case 'inline':
      return 'set (inline in the config file)';
    default:
      return 'not set';
  }
}

/** A few lines an operator can eyeball; never a secret value. */
export function configSummary(loaded: LoadedConfig): Record<string, string> {
  const c = loaded.config;
  return {
    base_url: c.service.base_url,
    face_base_url: c.service.face_base_url,
    terminal_secret: describeSecret(loaded.secrets.terminal_secret),
    api_key: loaded.secrets.api_key.source === 'none' ? 'not set (knowledge commands will need it)' : describeSecret(loaded.secrets.api_key),
    request: `timeout ${formatDuration(c.service.request_timeout)}, ${c.service.retries} retries${c.service.ca_file ? `, CA ${c.service.ca_file}` : ''}`,
    state_dir: c.state_dir,
    enroll_dir: c.enroll.dir,
    faces_sync: `every ${formatDuration(c.faces.sync_interval)}`,
    tts: `voice ${c.tts.voice || '(service default)'}, cache ${formatSize(c.tts.cache_size)}`,
    audio: `out ${c.audio.output_device}, in ${c.audio.input_device}`,
    control_socket: c.control.socket,
    console: c.console.listen.trim() === '' ? 'off'
      : `${c.console.listen}${c.console.tls_cert_file ? ' (https)' : ''}, login ${c.console.password_credential ? `by systemd credential ${c.console.password_credential}` : c.console.password_hash ? 'by password_hash' : 'none (loopback only)'}`,
    log_level: c.log.level,
  };
}

async function check(ctx: CliContext, configPath: string, json: boolean): Promise<number> {
  let loaded: LoadedConfig;
  try {
    const { loadConfigDetailed } = await import('../config/load-config.js');
    loaded = await loadConfigDetailed({ path: configPath, env: ctx.env, cwd: ctx.cwd, blocking: true });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return reportProblems(ctx, json, err.problems[0]?.file ?? configPath, err.problems);
  }
  // The files it names, read as the daemon reads them at start (which would stop at these).
  const fileProblems = await namedFileProblems(loaded.config);
  if (fileProblems.length > 0) return reportProblems(ctx, json, loaded.config.file ?? configPath, fileProblems);
  const summary = configSummary(loaded);
  if (json) {
    writeJson(ctx, { ok: true, file: loaded.config.file, problems: [], summary });
    return ExitCode.ok;
  }
  writeLine(ctx, `config OK: ${loaded.config.file}`);
  const width = Math.max(...Object.keys(summary).map((k) => k.length));
  for (const [k, v] of Object.entries(summary)) writeLine(ctx, `  ${k.padEnd(width)}  ${v}`);
  return ExitCode.ok;
}

function reportProblems(ctx: CliContext, json: boolean, file: string, problems: ConfigProblem[]): number {
  if (json) {
    writeJson(ctx, { ok: false, file, problems });
  } else {
    writeErr(ctx, `config has ${problems.length} problem${problems.length === 1 ? '' : 's'}:`);
    for (const p of problems) writeErr(ctx, `  ${formatProblem(p)}`);
  }
  return ExitCode.config;
}

export const configCommands: CommandSpec[] = [
  {
    path: ['config', 'check'],
    summary: 'validate the config file; print every problem with file:line (exit 78 on any)',
    description: `Reads the config (--config, else $TERMINAL_AGENT_CONFIG, else /etc/terminal-agent/config.yaml),
resolves the secrets, checks every key and reads the files it names (service.ca_file,
console.tls_cert_file and tls_key_file) as the daemon does at start. Secrets are taken, highest first, from
$TERMINAL_AGENT_TERMINAL_SECRET / $TERMINAL_AGENT_API_KEY, $CREDENTIALS_DIRECTORY/terminal_secret
and /api_key (systemd LoadCredential=), service.*_file, then inline values. Prints a summary that
never shows a secret. --json prints {ok, file, problems:[{path, message, file, line}], summary}.`,
    async run(args, ctx) {
      return check(ctx, args.global.configPath, args.global.json);
    },
  },
];
