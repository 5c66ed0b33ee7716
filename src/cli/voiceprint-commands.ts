import { join } from 'node:path';
import { stat } from 'node:fs/promises';
import type { CliContext, CommandSpec, ParsedArgs } from './command.js';
import { stringOpt } from './command.js';
import { writeErr, writeJson, writeLine, writeTable, type Column } from './output.js';
import { loadLocalConfig, withClient, type ApiSession } from './api-client.js';
import type { AgentConfig } from '../config/schema.js';
import { controlClient, tryConnectControl } from '../control/control-client.js';
import type { Db } from '../db/database.js';
import type { RegisterVoiceprintResult } from '../client/types.js';
import { AbortedError, UsageError, abortReason, interruptedError } from '../errors.js';
import type { EnrollResult } from '../voiceprint/voice-enroll.js';
import type { VoiceprintRow } from '../voiceprint/registry.js';
import { pruneVoiceprintAudits } from '../voiceprint/audit-retention.js';
import type { WavFileInfo } from '../voiceprint/wav-check.js';
import { openLiveArea } from './live-area.js';
import { levelLines, steadyHint, type LevelView } from './progress-format.js';
import { openEventStream } from '../events/sse-client.js';
import type { AgentEvent } from '../events/event-bus.js';
import { checkVoiceprintName, deleteVoiceprintEverywhere, recordSentFile, type RegisterOutcome, type SentAudio } from '../voiceprint/register.js';

// `voiceprint enroll` and `voiceprint list`, and what `voiceprint register|delete` (the client's
// commands in src/cli/voice-commands.ts) call so that the local registry follows them. SQLite, the
// registry and the recorder are imported when a command uses them, not by every CLI call.

async function agentDb(config: AgentConfig): Promise<Db> {
  const { openDatabase } = await import('../db/database.js');
  return openDatabase({ path: join(config.state_dir, 'agent.db') });
}

const registryOf = async (db: Db) => (await import('../voiceprint/registry.js')).createVoiceprintRegistry(db);

async function secondsOption(args: ParsedArgs): Promise<number | undefined> {
  const raw = stringOpt(args, 'seconds');
  if (raw === undefined) return undefined;
  const { MIN_SECONDS, MAX_SECONDS } = await import('../voiceprint/voice-enroll.js');
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds < MIN_SECONDS || seconds > MAX_SECONDS) {
    throw new UsageError(`--seconds ${JSON.stringify(raw)}: give a number of seconds from ${MIN_SECONDS} to ${MAX_SECONDS} (e.g. 8)`);
  }
  return seconds;
}

function printEnrolled(ctx: CliContext, json: boolean, r: EnrollResult): void {
  if (json) return writeJson(ctx, r);
  writeLine(ctx, `registered voiceprint ${JSON.stringify(r.name)}: ${r.voiceprint_id ?? '(the service returned no voiceprint_id)'}`);
  writeLine(ctx, `  ${r.sent.seconds} s at ${r.sent.sample_rate} Hz; ${r.levels}`);
  writeLine(ctx, `  kept for audit: ${r.audit.file}`);
}

/** The live countdown and level meter of `voiceprint enroll` on a terminal, with hints for the speaker. */
async function levelMeter(ctx: CliContext, json: boolean, name: string) {
  const area = await openLiveArea(ctx, json);
  const hints: LevelView['hint'][] = [];
  return {
    live: area.live,
    clear: () => area.clear(),
    onEvent(e: AgentEvent) {
      if (e.type !== 'voiceprint.level' || e.data.name !== name) return;
      const level = e.data as unknown as LevelView;
      hints.push(level.hint);
      if (hints.length > 5) hints.shift();
      area.update(levelLines(name, level, steadyHint(hints)));
    },
  };
}

const enroll: CommandSpec = {
  path: ['voiceprint', 'enroll'],
  summary: 'record someone from the microphone and register their voiceprint (through the daemon when it runs)',
  usage: '--name N [--seconds S]',
  description: `Records voiceprint.seconds (or --seconds) from audio.input_device, checks the level, speech
and clipping, then registers it. Ask the person to speak normally, close to the microphone, for the
whole recording. A refused recording says what was measured (peak, level, share of speech).`,
  options: {
    name: { type: 'string', description: 'speaker nickname, at most 32 bytes (UTF-8)', valueName: 'N' },
    seconds: { type: 'string', description: 'recording length, 1 to 60 (default voiceprint.seconds)', valueName: 'S' },
  },
  positionals: { min: 0, max: 0 },
  run: async (args, ctx) => {
    const rawName = stringOpt(args, 'name');
    if (rawName === undefined) throw new UsageError("'voiceprint enroll' needs --name N");
    const name = checkVoiceprintName(rawName);
    const seconds = await secondsOption(args);
    const config = await loadLocalConfig(args, ctx);
    // Ctrl-C closes the connection: the daemon takes that as a hang-up and stops the recording.
    const control = await tryConnectControl(config.control.socket, { signal: ctx.shutdown });
    const meter = await levelMeter(ctx, args.global.json, name);
    if (control) {
      if (!args.global.json) writeLine(ctx, `recording ${seconds ?? config.voiceprint.seconds} s through the daemon: speak now`);
      const stream = meter.live ? openEventStream({ socketPath: config.control.socket, types: ['voiceprint.level'], onEvent: meter.onEvent }) : undefined;
      await stream?.ready.catch(() => undefined); // a daemon without GET /events: no meter
      let r: EnrollResult;
      try {
        r = (await control.enrollVoiceprint({ name, ...(seconds !== undefined ? { seconds } : {}) })) as EnrollResult;
      } catch (err) {
        if (err instanceof AbortedError && ctx.shutdown.aborted) throw await afterHangUp(config.control.socket, name, ctx.shutdown);
        throw err;
      } finally {
        stream?.close();
        meter.clear();
      }
      return printEnrolled(ctx, args.global.json, r);
    }
    await withClient(args, ctx, async ({ client, config: cfg }) => {
      const [db, { createVoiceEnroll }, { silentLogger }] = await Promise.all([agentDb(cfg), import('../voiceprint/voice-enroll.js'), import('../log/logger.js')]);
      const events = meter.live ? (await import('../events/event-bus.js')).createEventBus() : undefined;
      events?.subscribe(meter.onEvent);
      const voice = createVoiceEnroll({ config: cfg, db, client, logger: silentLogger(), env: ctx.env, micWaitMs: 0, ...(events ? { events } : {}) });
      // Ctrl-C cancels as a hang-up does in the daemon: a recording stops and nothing is sent; an
      // upload under way is finished (a second Ctrl-C leaves at once), so that what the service
      // registered is in the local registry. With --json no note: stderr then carries only the
      // JSON error line of a failed command, and the result on stdout says what happened.
      const onAbort = () => {
        if (args.global.json) return;
        if ((voice.status().current as { phase?: string } | null)?.phase === 'uploading') {
          writeErr(ctx, `interrupted: ${abortReason(ctx.shutdown, 'stopped')}; the recording of '${name}' was already being sent: waiting for the service's answer so that it is listed (Ctrl-C again to leave at once)`);
        }
      };
      ctx.shutdown.addEventListener('abort', onAbort, { once: true });
      try {
        if (!args.global.json) writeLine(ctx, `recording ${seconds ?? cfg.voiceprint.seconds} s from ${cfg.audio.input_device}: speak now`);
        const result = await voice.enroll({ name, ...(seconds !== undefined ? { seconds } : {}), signal: ctx.shutdown }).finally(() => meter.clear());
        printEnrolled(ctx, args.global.json, result);
      } catch (err) {
        if (err instanceof AbortedError && ctx.shutdown.aborted) throw interruptedError(ctx.shutdown, `the recording of '${name}' stopped: nothing was sent or registered`, err);
        throw err;
      } finally {
        ctx.shutdown.removeEventListener('abort', onAbort);
        await voice.stop();
        db.close();
      }
    });
  },
};

/**
 * What became of an enrollment the CLI hung up on: the daemon stops a recording, and finishes an
 * upload already under way (see voice-enroll.ts). Its status says which; an interrupted command
 * exits 1 either way, since it cannot report a result.
 */
async function afterHangUp(socketPath: string, name: string, signal: AbortSignal): Promise<AbortedError> {
  const status = await controlClient(socketPath, { timeoutMs: 5000 }).status().catch(() => undefined);
  const voice = status?.audio.voice as { current?: { name?: string; phase?: string } | null; last?: { name?: string; ok?: boolean; voiceprint_id?: string } | null } | undefined;
  if (voice?.current?.name === name && voice.current.phase === 'uploading') {
    return interruptedError(signal, `the recording of '${name}' was already being sent: the daemon completes its registration, and 'voiceprint list' shows it once the service answered`);
  }
  if (voice?.last?.name === name && voice.last.ok) {
    return interruptedError(signal, `the daemon had already registered '${name}' (${voice.last.voiceprint_id ?? 'no voiceprint_id'}); 'voiceprint list' shows it`);
  }
  return interruptedError(signal, `the daemon stopped the recording of '${name}': nothing was sent or registered`);
}

const COLUMNS: Column<VoiceprintRow>[] = [
  { header: 'voiceprint_id', value: (r) => r.voiceprint_id },
  { header: 'name', value: (r) => r.name },
  { header: 'source', value: (r) => r.source },
  { header: 'seconds', value: (r) => (r.seconds === null ? null : r.seconds.toFixed(1)) },
  { header: 'created', value: (r) => r.created_at },
];

const list: CommandSpec = {
  path: ['voiceprint', 'list'],
  summary: "the voiceprints this terminal registered (the agent's local registry; the API has no list call)",
  positionals: { min: 0, max: 0 },
  run: async (args, ctx) => {
    const config = await loadLocalConfig(args, ctx);
    // Read-only, as `speaker list`: an operator who may only read agent.db can list.
    const [{ readAgentDb }, { createVoiceprintRegistry }] = await Promise.all([import('../db/read-only.js'), import('../voiceprint/registry.js')]);
    const rows = readAgentDb(config.state_dir, (db) => createVoiceprintRegistry(db).list());
    if (args.global.json) return writeJson(ctx, rows);
    writeTable(ctx, rows, COLUMNS, '(no voiceprints registered from this terminal)');
  },
};

export const voiceprintCommands: CommandSpec[] = [enroll, list];

/**
 * After `voiceprint register FILE` succeeded: the audit copy, its result and the registry row. The
 * fields are derived the way the command sent them (the WAV header, else voiceprint.sample_rate mono).
 */
export async function keepRegistered(
  config: AgentConfig,
  input: { name: string; path: string; wav: WavFileInfo | undefined; result: RegisterVoiceprintResult },
): Promise<RegisterOutcome> {
  const { wav } = input;
  const bytes = wav ? wav.fileBytes : (await stat(input.path)).size;
  const sampleRate = wav ? wav.sampleRate : config.voiceprint.sample_rate;
  const channels = wav ? wav.channels : 1;
  const seconds = wav ? wav.seconds : bytes / 2 / channels / sampleRate;
  const sent: SentAudio = { sample_rate: sampleRate, channel: channels, format: wav ? 'wav' : 'pcm', model: config.voiceprint.model, bytes, seconds: Number(seconds.toFixed(3)) };
  const db = await agentDb(config);
  try {
    const registry = await registryOf(db);
    const outcome = await recordSentFile({ registry, stateDir: config.state_dir, model: config.voiceprint.model }, { name: input.name, source: 'cli', path: input.path, sent, result: input.result });
    // Housekeeping must not turn a registration that worked into a failed command.
    await pruneVoiceprintAudits({ stateDir: config.state_dir, registry }).catch(() => undefined);
    return outcome;
  } finally {
    db.close();
  }
}

/** `voiceprint delete`: on the service, then in the registry (also when the service no longer has it). */
export async function deleteAndForget(session: ApiSession, id: string): Promise<{ code: number; message: string; removed_locally: boolean; already_gone: boolean }> {
  const db = await agentDb(session.config);
  try {
    const r = await deleteVoiceprintEverywhere({ client: session.client, registry: await registryOf(db) }, id, session.call);
    return {
      code: r.service?.code ?? 0,
      message: r.service?.message ?? 'the service no longer had it',
      removed_locally: r.removedLocally,
      already_gone: r.alreadyGoneOnService,
    };
  } finally {
    db.close();
  }
}
