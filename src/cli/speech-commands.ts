import { resolve as resolvePath, join } from 'node:path';
import { boolOpt, stringOpt, type CliContext, type CommandSpec, type ParsedArgs } from './command.js';
import { writeJson, writeLine, writeWarning } from './output.js';
import { clientFromConfig, type ApiSession } from './api-client.js';
import { tryConnectControl } from '../control/control-client.js';
import type { Db } from '../db/database.js';
import { AbortedError, UsageError, abortReason, describeError } from '../errors.js';
import { ensureWritable } from '../util/fs-atomic.js';
import { resolveTtsParams, ttsBody, ttsBounds, type SayRequest, type SayResult } from '../audio/speech-types.js';
import { saveSynthesizedWav } from '../audio/wav-file-writer.js';
import { formatDuration, formatSize } from '../util/units.js';

// `say`: through the daemon's playback queue when it runs (so phrases never overlap), directly
// in this process when it does not, or into a WAV file with --out (no daemon, no speaker).

function ratioOption(args: ParsedArgs, option: string): number | undefined {
  const v = stringOpt(args, option);
  if (v === undefined) return undefined;
  if (!/^\s*-?\d+(\.\d+)?\s*$/.test(v)) throw new UsageError(`--${option} ${JSON.stringify(v)} is not a number; give 0 to 100 (50 = normal)`);
  return Number(v);
}

function requestFrom(args: ParsedArgs): SayRequest {
  const req: SayRequest = { text: args.positionals[0] ?? '' };
  const voice = stringOpt(args, 'voice');
  if (voice !== undefined) req.voice = voice;
  const volume = ratioOption(args, 'volume');
  const speed = ratioOption(args, 'speed');
  const pitch = ratioOption(args, 'pitch');
  if (volume !== undefined) req.volume_ratio = volume;
  if (speed !== undefined) req.speed_ratio = speed;
  if (pitch !== undefined) req.pitch_ratio = pitch;
  if (boolOpt(args, 'interrupt')) req.interrupt = true;
  return req;
}

function report(ctx: CliContext, args: ParsedArgs, mode: 'daemon' | 'direct', result: SayResult): void {
  if (args.global.json) return writeJson(ctx, { mode, ...result });
  if (result.outcome === 'interrupted') {
    writeLine(ctx, `interrupted${result.reason ? `: ${result.reason}` : ''}`);
    return;
  }
  const from = result.source === 'cache' ? 'from the TTS cache' : 'from the service';
  const first = result.first_frame_ms !== undefined ? `, first frame after ${formatDuration(result.first_frame_ms)}` : '';
  writeLine(ctx, `played ${formatDuration(result.audio_ms ?? 0)} ${from}${first}${mode === 'direct' ? ' (no daemon running: played directly)' : ''}`);
}

/** Plays in this process, with the state_dir cache when it is writable (else without cache). */
async function sayDirect(session: ApiSession, ctx: CliContext, req: SayRequest, json: boolean): Promise<SayResult> {
  const { config, client } = session;
  // The player, the TTS cache and their database are loaded for this path only.
  // prom-client through `.default`: see src/client/multipart.ts.
  const [{ default: { Registry } }, { openDatabase }, { silentLogger }, { createSpeech }] = await Promise.all([
    import('prom-client'),
    import('../db/database.js'),
    import('../log/logger.js'),
    import('../audio/speech.js'),
  ]);
  let db: Db;
  let cacheSize = config.tts.cache_size;
  try {
    db = openDatabase({ path: join(config.state_dir, 'agent.db') });
  } catch (err) {
    writeWarning(ctx, json, { text: `playing without the TTS cache: ${describeError(err)}`, code: 'TA_WARN_NO_TTS_CACHE' });
    db = openDatabase({ path: ':memory:' });
    cacheSize = 0;
  }
  const speech = createSpeech({
    config: { ...config, tts: { ...config.tts, cache_size: cacheSize } },
    logger: silentLogger(),
    db,
    client,
    metrics: new Registry(),
    // No second utterance will follow: a waiting player process would only cost a start-up.
    playerOptions: { env: ctx.env, warm: false },
  });
  try {
    return await speech.say({ ...req, signal: ctx.shutdown });
  } finally {
    await speech.stop();
    db.close();
  }
}

const say: CommandSpec = {
  path: ['say'],
  summary: 'speak text through the daemon\'s playback queue (directly when no daemon runs); --out writes the WAV instead',
  usage: 'TEXT',
  description: `Ratios go from 0 to 100 (50 = normal); unset ones come from tts.* in the config.
Waits until the phrase has been spoken and prints how it went. With a running daemon the phrase
joins its queue (phrases never overlap); --interrupt stops the current one and clears the queue.`,
  options: {
    voice: { type: 'string', description: 'voice identifier (see `terminal-agent voices`); default tts.voice', valueName: 'V' },
    volume: { type: 'string', description: 'volume ratio 0..100; default tts.volume_ratio', valueName: 'N' },
    speed: { type: 'string', description: 'speed ratio 0..100; default tts.speed_ratio', valueName: 'N' },
    pitch: { type: 'string', description: 'pitch ratio 0..100; default tts.pitch_ratio', valueName: 'N' },
    interrupt: { type: 'boolean', description: 'stop what is playing and drop the queue first' },
    out: { type: 'string', short: 'o', description: 'write the synthesized WAV to FILE instead of playing it (needs no daemon)', valueName: 'FILE' },
  },
  positionals: { min: 1, max: 1, names: ['TEXT'] },
  run: async (args, ctx) => {
    const req = requestFrom(args);
    const out = stringOpt(args, 'out');
    const session = await clientFromConfig(args, ctx, { requireSecrets: false });
    try {
      // Refuse bad ratios and empty text here, before the daemon or the service sees them.
      const params = resolveTtsParams(req, session.config.tts);
      if (out !== undefined) {
        const path = resolvePath(ctx.cwd, out);
        await ensureWritable(path);
        const saved = await saveSynthesizedWav(session.client, ttsBody(params), path, ttsBounds(session.config.tts, params.text), session.call);
        if (args.global.json) return writeJson(ctx, { file: path, ...saved });
        writeLine(ctx, `wrote ${path}: ${formatDuration(saved.audio_ms)}, ${saved.sample_rate} Hz, ${saved.channels} channel(s), ${saved.bits_per_sample}-bit, ${formatSize(saved.bytes)}`);
        return;
      }
      // Ctrl-C closes the connection, which the daemon takes as a hang-up: the phrase is cut, or
      // dropped from its queue, as in direct playback.
      const daemon = await tryConnectControl(session.config.control.socket, { signal: ctx.shutdown });
      if (daemon) {
        // Only what the operator gave: the daemon applies the tts.* defaults of its own config.
        const result = await (daemon.say({ ...req }) as Promise<SayResult>).catch((err: unknown) => {
          if (!(err instanceof AbortedError) || !ctx.shutdown.aborted) throw err;
          const reason = abortReason(ctx.shutdown, 'stopped');
          return { outcome: 'interrupted', reason } as SayResult;
        });
        return report(ctx, args, 'daemon', result);
      }
      report(ctx, args, 'direct', await sayDirect(session, ctx, req, args.global.json));
    } finally {
      await session.client.close();
    }
  },
};

export const speechCommands: CommandSpec[] = [say];
