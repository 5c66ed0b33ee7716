import { createReadStream } from 'node:fs';
import { once } from 'node:events';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../log/logger.js';
import type { ServiceClient, StreamedBody } from '../client/types.js';
import { AbortedError, BadResponseError, NetworkError, TimeoutError, isAgentError, describeError } from '../errors.js';
import { WavDecoder } from './wav-decoder.js';
import { durationMs, type WavHeaderInfo } from './wav.js';
import type { Player } from './player.js';
import type { TtsCache, TtsParams } from './tts-cache.js';
import type { WavFileWriter } from './wav-file-writer.js';
import { ttsBody, ttsBounds, type TtsLimits } from './speech-types.js';

// One utterance, start to end: audio from the cache or from POST /tts, streamed through the WAV
// decoder into the player as it arrives, and (from the service) teed into a cache entry that is
// committed only if the whole stream was valid.

export interface UtteranceDeps {
  client: Pick<ServiceClient, 'synthesize'>;
  cache: TtsCache;
  player: Player;
  logger: Logger;
  /** No byte of the /tts body for this long (while playback waits for it) fails the utterance. */
  stallTimeoutMs: number;
  /** tts.max_duration_per_char, tts.max_duration, tts.max_size: the bounds of one answer (speech-types.ts). */
  limits: TtsLimits;
}

export interface UtteranceHooks {
  signal: AbortSignal;
  onSource?(source: 'cache' | 'service'): void;
  onFirstFrame?(): void;
}

export interface UtteranceReport {
  source: 'cache' | 'service';
  bytes: number;
  audioMs: number;
  cached: boolean;
}

export async function playUtterance(deps: UtteranceDeps, params: TtsParams, key: string, hooks: UtteranceHooks): Promise<UtteranceReport> {
  const hit = deps.cache.get(key);
  if (hit) {
    hooks.onSource?.('cache');
    const played = await stream(deps, createReadStream(hit.path), new WavDecoder({ source: 'input' }), hooks);
    return { source: 'cache', bytes: played.bytes, audioMs: durationMs(played.header, played.bytes), cached: true };
  }
  hooks.onSource?.('service');
  const res = await deps.client.synthesize(ttsBody(params), { signal: hooks.signal });
  await refuseNonAudio(res);
  const writer = deps.cache.writer(key);
  const decoder = new WavDecoder({ source: 'service', bounds: ttsBounds(deps.limits, params.text), ...(res.contentLength !== undefined ? { expectedBytes: res.contentLength } : {}) });
  let played: { bytes: number; header: WavHeaderInfo };
  try {
    played = await stream(deps, res.body, decoder, hooks, writer);
  } catch (err) {
    await writer?.abort();
    throw err;
  }
  let cached = false;
  if (writer?.ok) {
    try {
      await deps.cache.commit(key, writer, played.header, decoder.dataBytes);
      cached = true;
    } catch (err) {
      // The phrase was played; only its offline copy is lost.
      deps.logger.warn({ err: describeError(err) }, 'could not store synthesized audio in the TTS cache');
      await writer.abort();
    }
  } else await writer?.abort();
  return { source: 'service', bytes: played.bytes, audioMs: durationMs(played.header, played.bytes), cached };
}

async function stream(
  deps: UtteranceDeps,
  source: Readable,
  decoder: WavDecoder,
  hooks: UtteranceHooks,
  writer?: WavFileWriter,
): Promise<{ bytes: number; header: WavHeaderInfo }> {
  const { signal } = hooks;
  let received = 0;
  let stall: NodeJS.Timeout | undefined;
  const armStall = () => {
    clearTimeout(stall);
    stall = setTimeout(() => {
      // A full decoder means playback is behind, not that the service went quiet.
      if (decoder.readableLength >= decoder.readableHighWaterMark) return armStall();
      source.destroy(new TimeoutError(`POST /tts stalled: no audio for ${deps.stallTimeoutMs} ms after ${received} bytes (service.request_timeout)`, { operation: 'POST /tts' }));
    }, deps.stallTimeoutMs);
  };
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      armStall();
      writer?.write(chunk);
      cb(null, chunk);
    },
  });
  armStall();
  const upstream = pipeline(source, tap, decoder, { signal });
  upstream.catch(() => undefined);
  try {
    let header: WavHeaderInfo;
    try {
      [header] = (await once(decoder, 'format', { signal })) as [WavHeaderInfo];
    } catch (err) {
      await upstream.catch(() => undefined);
      throw classify(err, signal, received);
    }
    const play = deps.player.play(header, decoder, { signal, ...(hooks.onFirstFrame ? { onFirstFrame: hooks.onFirstFrame } : {}) });
    // A player that failed reads no more: end the download too, or `upstream` would wait forever
    // on the decoder's backpressure (a phrase longer than the stream buffers never settled).
    play.catch(() => decoder.destroy());
    const [up, pl] = await Promise.allSettled([upstream, play]);
    if (signal.aborted) throw classify(signal.reason, signal, received);
    // The player's own error (device, closed) or the source's error it passed on; the premature
    // close that `upstream` then reports is only the consequence.
    if (pl.status === 'rejected' && isAgentError(pl.reason)) throw pl.reason;
    if (up.status === 'rejected') throw classify(up.reason, signal, received);
    if (pl.status === 'rejected') throw classify(pl.reason, signal, received);
    return { bytes: pl.value.bytes, header };
  } finally {
    clearTimeout(stall);
  }
}

function classify(err: unknown, signal: AbortSignal, received: number): Error {
  if (signal.aborted) {
    if (err instanceof AbortedError) return err;
    const reason = signal.reason instanceof Error ? signal.reason.message : 'the utterance was stopped';
    return new AbortedError(reason, { cause: signal.reason });
  }
  if (isAgentError(err)) return err;
  // A body cut by the server ends with a socket error (ECONNRESET, "aborted"), not a typed one.
  return new NetworkError(`the POST /tts audio stream broke off after ${received} bytes: ${describeError(err)}; check the network and the service`, {
    operation: 'POST /tts',
    cause: err,
  });
}

/** A 200 that carries JSON or text instead of audio: say what the service said. */
async function refuseNonAudio(res: StreamedBody): Promise<void> {
  const type = (res.contentType || '').toLowerCase();
  if (!/json|text\//.test(type)) return;
  let text = '';
  try {
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString('utf8');
      if (text.length > 4096) break;
    }
  } finally {
    await res.cancel().catch(() => undefined);
  }
  let message = text.trim().slice(0, 300);
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const m = j.message ?? j.detail ?? j.error ?? j.return_message;
    if (typeof m === 'string') message = `${m}${j.code !== undefined ? ` (code ${String(j.code)})` : ''}`;
  } catch {
    // not JSON: keep the text
  }
  throw new BadResponseError(`POST /tts answered ${res.status} with ${type} instead of audio/wav: ${message || '(empty body)'}`, {
    operation: 'POST /tts',
    status: res.status,
    serverMessage: message,
  });
}
