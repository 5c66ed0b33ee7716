import { dirname, join } from 'node:path';
import type { CliContext } from './command.js';
import { writeJson, writeLine } from './output.js';
import { createServiceClient } from '../client/service-client.js';
import { silentLogger } from '../log/logger.js';
import { userAgent } from '../version.js';
import { ConfigError, ExitCode, describeError, formatProblem } from '../errors.js';
import { daemonAnswers } from '../control/control-client.js';
import { namedFileProblems } from '../config/named-files.js';
import {
  checkApiKey, checkConnect, checkDiskFloor, checkDns, checkFaceCheck, checkInputDevice, checkOutputDevice, checkProgram,
  checkTerminalSecret, checkWritable, type CheckResult,
} from '../daemon/doctor-checks.js';

// `terminal-agent doctor`: every check in order, one line each with the fix; exit 78 when the config
// itself is wrong (nothing else can be checked), 1 when any other check fails, 0 when all pass.

const ENROLL_KINDS = ['faces', 'voiceprints', 'speakers', 'knowledge'];

export async function runDoctor(ctx: CliContext, configPath: string, json: boolean): Promise<number> {
  const results: CheckResult[] = [];
  const emit = (r: CheckResult) => {
    results.push(r);
    if (!json) writeLine(ctx, formatCheck(r));
  };

  let loaded;
  try {
    // Imported here, as everywhere: only the commands that read the whole config load zod and YAML.
    const { loadConfigDetailed } = await import('../config/load-config.js');
    loaded = await loadConfigDetailed({ path: configPath, env: ctx.env, cwd: ctx.cwd, blocking: true });
    // The files it names too: the daemon would stop at start on them, and the client below needs ca_file.
    const fileProblems = await namedFileProblems(loaded.config);
    if (fileProblems.length > 0) throw new ConfigError(fileProblems);
    const origins = Object.entries(loaded.secrets).map(([k, v]) => `${k} from ${v.source}`).join(', ');
    emit({ check: 'config', result: 'ok', detail: `${loaded.config.file ?? configPath} valid (${origins})` });
  } catch (err) {
    const problems = err instanceof ConfigError ? err.problems.map(formatProblem) : [describeError(err)];
    for (const p of problems) emit({ check: 'config', result: 'fail', detail: p, fix: 'edit the file (terminal-agent config check lists every problem)' });
    return finish(ctx, results, json, ExitCode.config);
  }
  const cfg = loaded.config;

  const bases = [['base_url', cfg.service.base_url], ['face_base_url', cfg.service.face_base_url]] as const;
  const seen = new Set<string>();
  for (const [label, raw] of bases) {
    const url = new URL(raw);
    if (seen.has(url.host)) continue;
    seen.add(url.host);
    emit(await checkDns(label, url));
    emit(await checkConnect(label, url, cfg.service, ctx.env));
  }

  const client = createServiceClient({ config: cfg.service, logger: silentLogger(), userAgent: userAgent(ctx.version), env: ctx.env });
  try {
    emit(await checkTerminalSecret(cfg, client));
    emit(await checkApiKey(cfg, client));
  } finally {
    await client.close();
  }

  emit(await checkWritable('state_dir', cfg.state_dir));
  emit(await checkDiskFloor(cfg));
  emit(await checkWritable('enroll.dir', cfg.enroll.dir));
  for (const kind of ENROLL_KINDS) emit(await checkWritable(`enroll/${kind}`, join(cfg.enroll.dir, kind)));
  emit(await checkFaceCheck(cfg.enroll.face_check));
  emit(await checkWritable('control socket dir', dirname(cfg.control.socket)));

  const recorder = cfg.voiceprint.recorder;
  emit(await checkProgram('aplay', ['--version'], ctx.env, 'apt-get install alsa-utils'));
  emit(await checkProgram(recorder, ['--version'], ctx.env, recorder === 'sox' ? 'apt-get install sox' : 'apt-get install alsa-utils'));
  const running = await daemonAnswers(cfg.control.socket);
  if (running) {
    // The daemon holds the devices while it plays or records; opening them again would only say "busy".
    emit({ check: 'audio devices', result: 'warn', detail: `the daemon is running (${cfg.control.socket}); device checks skipped`, fix: 'stop the daemon to test the devices, or use terminal-agent status' });
  } else {
    emit(await checkOutputDevice(cfg.audio.output_device, ctx.env));
    emit(await checkInputDevice(cfg.audio.input_device, ctx.env));
  }
  emit({ check: 'daemon', result: 'ok', detail: running ? `running, control socket ${cfg.control.socket}` : 'not running (start it with systemctl start terminal-agent)' });

  return finish(ctx, results, json, results.some((r) => r.result === 'fail') ? ExitCode.failure : ExitCode.ok);
}

export function formatCheck(r: CheckResult): string {
  const tag = r.result === 'ok' ? 'ok  ' : r.result === 'warn' ? 'warn' : 'FAIL';
  return `${tag}  ${r.check.padEnd(26)} ${r.detail}${r.fix && r.result !== 'ok' ? ` -- fix: ${r.fix}` : ''}`;
}

function finish(ctx: CliContext, results: CheckResult[], json: boolean, code: number): number {
  const count = (result: CheckResult['result']) => results.filter((r) => r.result === result).length;
  const [passed, warned, failed] = [count('ok'), count('warn'), count('fail')];
  if (json) writeJson(ctx, { ok: failed === 0, passed, warned, failed, checks: results });
  else writeLine(ctx, doctorSummary(passed, warned, failed));
  return code;
}

/** `17 checks: all passed`, `16 of 17 checks passed, 1 warning`, `15 of 17 checks passed, 1 failed, 1 warning`. */
export function doctorSummary(passed: number, warned: number, failed: number): string {
  const total = passed + warned + failed;
  if (passed === total) return `all ${total} checks passed`;
  const rest = [failed ? `${failed} failed` : '', warned ? `${warned} warning${warned > 1 ? 's' : ''}` : ''].filter(Boolean);
  return `${passed} of ${total} checks passed, ${rest.join(', ')}`;
}
