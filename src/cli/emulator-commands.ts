// `terminal-agent emulator`: the service emulator alone, for trying and testing the agent with no
// cloud account. Once it listens it prints its addresses and credentials (one JSON line with
// --json): that ready line is the only place a credential is ever printed.
import type { CliContext, CommandSpec, OptionSpec, ParsedArgs } from './command.js';
import { listOpt, stringOpt, boolOpt } from './command.js';
import { writeJson, writeLine } from './output.js';
import { UsageError } from '../errors.js';
import { parseDuration, parseSize } from '../util/units.js';
import type { ChaosSettings, EmulatorOptions, OtherAuth, TerminalCredential, TtsEngine } from '../emulator/index.js';

const OPTIONS: Record<string, OptionSpec> = {
  port: { type: 'string', valueName: 'N', description: 'port to listen on (default 8780; 0 picks a free port)' },
  host: { type: 'string', valueName: 'H', description: 'address to listen on (default 127.0.0.1)' },
  data: { type: 'string', valueName: 'DIR', description: 'keep state in DIR (survives restarts); in memory when absent' },
  terminal: { type: 'string', multiple: true, valueName: 'SECRET:GROUP', description: 'a terminal secret and its group (repeatable); made up when absent' },
  'api-key': { type: 'string', valueName: 'KEY', description: 'API key for knowledge calls; made up when absent' },
  'train-seconds': { type: 'string', valueName: 'S', description: 'how long speaker training stays at status 0 (default 3; accepts 200ms)' },
  tts: { type: 'string', valueName: 'ENGINE', description: 'auto (espeak-ng when installed), espeak or tone' },
  'other-auth': { type: 'string', valueName: 'KIND', description: 'credential demanded by notify/tts/train/voiceprint: none (default), terminal_secret, api_key' },
  'max-upload': { type: 'string', valueName: 'SIZE', description: 'largest file part accepted (default 100MB)' },
  fault: { type: 'string', multiple: true, valueName: 'SPEC', description: "deterministic fault: '[METHOD] PATH ACTION [xN] [retry-after=S]', e.g. 'GET /v1/api/faces 503 x2'" },
  latency: { type: 'string', valueName: 'DUR', description: 'latency added to every answer, e.g. 50ms' },
  'latency-jitter': { type: 'string', valueName: 'DUR', description: 'extra random latency up to DUR' },
  'error-rate': { type: 'string', valueName: 'F', description: 'share (0..1) of requests answered 500/503' },
  'throttle-rate': { type: 'string', valueName: 'F', description: 'share (0..1) of requests answered 429 with Retry-After' },
  'drop-rate': { type: 'string', valueName: 'F', description: 'share (0..1) of connections closed with no answer' },
  'slow-body': { type: 'string', valueName: 'SIZE', description: 'send response bodies at SIZE per second, e.g. 64KB' },
  seed: { type: 'string', valueName: 'N', description: 'seed of the fault dice, for repeatable runs' },
  verbose: { type: 'boolean', short: 'v', description: 'log every request (JSON lines on stderr)' },
};

function parseTerminal(spec: string): TerminalCredential {
  const i = spec.lastIndexOf(':');
  const secret = i > 0 ? spec.slice(0, i) : '';
  const group = i > 0 ? spec.slice(i + 1) : '';
  // The value is a secret: the message must not repeat it.
  if (!secret || !group) throw new UsageError("--terminal takes SECRET:GROUP (both non-empty), e.g. --terminal s3cret-value:lobby");
  return { terminal_secret: secret, group_id: group };
}

function fraction(args: ParsedArgs, name: string): number | undefined {
  const raw = stringOpt(args, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw.trim()) || n < 0 || n > 1) throw new UsageError(`--${name} takes a fraction between 0 and 1, e.g. 0.05; got '${raw}'`);
  return n;
}

function duration(args: ParsedArgs, name: string, bareUnit: 'ms' | 's' = 'ms'): number | undefined {
  const raw = stringOpt(args, name);
  if (raw === undefined) return undefined;
  const ms = parseDuration(/^\s*\d+(\.\d+)?\s*$/.test(raw) ? `${raw}${bareUnit}` : raw);
  if (ms === undefined) throw new UsageError(`--${name} takes a duration such as 500ms, 2s; got '${raw}'`);
  return ms;
}

function oneOf<T extends string>(args: ParsedArgs, name: string, allowed: readonly T[]): T | undefined {
  const raw = stringOpt(args, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw new UsageError(`--${name} takes one of ${allowed.join(', ')}; got '${raw}'`);
  return raw as T;
}

export async function emulatorOptionsFromArgs(args: ParsedArgs): Promise<EmulatorOptions> {
  const portRaw = stringOpt(args, 'port') ?? '8780';
  if (!/^\d+$/.test(portRaw) || Number(portRaw) > 65535) throw new UsageError(`--port takes a port number 0..65535; got '${portRaw}'`);
  const sizeOf = (name: string) => {
    const raw = stringOpt(args, name);
    if (raw === undefined) return undefined;
    const n = parseSize(raw);
    if (n === undefined || n <= 0) throw new UsageError(`--${name} takes a size such as 64KB, 20MB; got '${raw}'`);
    return n;
  };
  const chaos: ChaosSettings = {};
  const set = <K extends keyof ChaosSettings>(k: K, v: ChaosSettings[K] | undefined) => {
    if (v !== undefined) chaos[k] = v;
  };
  set('latencyMs', duration(args, 'latency'));
  set('latencyJitterMs', duration(args, 'latency-jitter'));
  set('errorRate', fraction(args, 'error-rate'));
  set('throttleRate', fraction(args, 'throttle-rate'));
  set('dropRate', fraction(args, 'drop-rate'));
  set('slowBodyBytesPerSec', sizeOf('slow-body'));
  const seed = stringOpt(args, 'seed');
  if (seed !== undefined) {
    if (!/^\d+$/.test(seed)) throw new UsageError(`--seed takes a whole number; got '${seed}'`);
    chaos.seed = Number(seed);
  }
  const opts: EmulatorOptions = { port: Number(portRaw), host: stringOpt(args, 'host') ?? '127.0.0.1', chaos };
  const terminals = listOpt(args, 'terminal').map(parseTerminal);
  if (terminals.length > 0) opts.terminals = terminals;
  const apiKey = stringOpt(args, 'api-key');
  if (apiKey !== undefined) {
    if (apiKey === '') throw new UsageError('--api-key must not be empty');
    opts.apiKey = apiKey;
  }
  const data = stringOpt(args, 'data');
  if (data !== undefined) opts.dataDir = data;
  const train = duration(args, 'train-seconds', 's');
  if (train !== undefined) opts.trainMs = train;
  const tts = oneOf<TtsEngine>(args, 'tts', ['auto', 'espeak', 'tone']);
  if (tts) opts.tts = tts;
  const other = oneOf<OtherAuth>(args, 'other-auth', ['none', 'terminal_secret', 'api_key']);
  if (other) opts.otherAuth = other;
  const maxUpload = sizeOf('max-upload');
  if (maxUpload !== undefined) opts.maxUploadBytes = maxUpload;
  const { parseFaultSpec } = await import('../emulator/faults.js');
  const faults = listOpt(args, 'fault').map(parseFaultSpec);
  if (faults.length > 0) opts.faults = faults;
  return opts;
}

async function runEmulator(args: ParsedArgs, ctx: CliContext): Promise<number> {
  const opts = await emulatorOptionsFromArgs(args);
  let secrets: string[] = [];
  // The emulator (and pino) are loaded only by this command, not by every CLI call.
  const [{ createLogger }, { startEmulator }] = await Promise.all([import('../log/logger.js'), import('../emulator/index.js')]);
  const logger = createLogger({
    level: boolOpt(args, 'verbose') ? 'debug' : 'info',
    destination: { write: (line: string) => ctx.io.stderr.write(line) },
    secrets: () => secrets,
  }).child({ component: 'emulator' });
  const emulator = await startEmulator({ ...opts, logger });
  secrets = [...emulator.terminals.map((t) => t.terminal_secret), emulator.apiKey];
  const ready = { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminals: emulator.terminals, api_key: emulator.apiKey };
  if (args.global.json) writeJson(ctx, ready);
  else {
    writeLine(ctx, `terminal-agent emulator listening on ${emulator.baseUrl} (state ${opts.dataDir ? `in ${opts.dataDir}` : 'in memory'})`);
    writeLine(ctx, '');
    writeLine(ctx, 'Point a config at it:');
    writeLine(ctx, '  service:');
    writeLine(ctx, `    base_url: ${emulator.baseUrl}`);
    writeLine(ctx, `    face_base_url: ${emulator.faceBaseUrl}`);
    writeLine(ctx, `    terminal_secret: ${emulator.terminals[0]!.terminal_secret}   # group ${emulator.terminals[0]!.group_id}`);
    writeLine(ctx, `    api_key: ${emulator.apiKey}`);
    for (const t of emulator.terminals.slice(1)) writeLine(ctx, `  other terminal: secret ${t.terminal_secret}, group ${t.group_id}`);
    writeLine(ctx, '');
    writeLine(ctx, `Faults at run time: ${emulator.baseUrl}/__emulator/faults (GET, POST a rule, DELETE), /__emulator/chaos (PUT). Ctrl-C stops.`);
  }
  logger.info({ base_url: emulator.baseUrl, terminals: emulator.terminals.length, data: opts.dataDir ?? null }, 'emulator ready');
  if (!ctx.shutdown.aborted) await new Promise<void>((resolve) => ctx.shutdown.addEventListener('abort', () => resolve(), { once: true }));
  await emulator.close();
  logger.info('emulator stopped');
  return 0;
}

export const emulatorCommands: CommandSpec[] = [
  {
    path: ['emulator'],
    summary: 'run the local service emulator (every endpoint of the cloud API, with fault injection)',
    usage: '[--port N] [--data DIR] [--terminal SECRET:GROUP ...] [--api-key KEY]',
    description: `
Serves {base_url} at http://HOST:PORT and {face_base_url} at http://HOST:PORT/v1/api. When ready it
prints both addresses and the credentials to use (one JSON line with --json):
  {"base_url":...,"face_base_url":...,"terminals":[{"terminal_secret":...,"group_id":...}],"api_key":...}
Fault SPEC actions: a status (503), drop, drop-after, drop-body, truncate, json, delay=MS (with an
action: that action, late); then xN (times, 'xinf' for all) and retry-after=S.
Stops on SIGTERM/SIGINT.`,
    options: OPTIONS,
    run: runEmulator,
  },
];
