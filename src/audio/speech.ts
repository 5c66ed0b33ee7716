import type { EventPublisher } from '../events/event-bus.js';
import { join } from 'node:path';
import type { Registry } from '../metrics/prom.js';
import type { Logger } from '../log/logger.js';
import type { Db } from '../db/database.js';
import type { ServiceClient } from '../client/types.js';
import { AbortedError, BusyError, describeError, isAgentError } from '../errors.js';
import { createPlayer, type Player, type PlayerDeps } from './player.js';
import { createTtsCache, ttsCacheKey, type TtsParams } from './tts-cache.js';
import { createDiskFloor } from '../disk/disk-floor.js';
import { playUtterance } from './utterance.js';
import { createSpeechMetrics } from './speech-metrics.js';
import { resolveTtsParams, type SayRequest, type SayResult, type SpeechConfig, type SpeechStatus } from './speech-types.js';

export type { SayRequest, SayResult, SpeechStatus, SpeechConfig } from './speech-types.js';

// The daemon's one playback queue: utterances play in order, one at a time, on one device. A
// request may interrupt (stop the current one and drop the queue). hold() pauses the queue for a
// microphone recording. Each say() settles with its own utterance's outcome.

export interface SpeechDeps {
  config: SpeechConfig;
  logger: Logger;
  db: Db;
  client: Pick<ServiceClient, 'synthesize'>;
  metrics: Registry;
  /** Player process options (tests give the ALSA environment); `player` replaces it entirely. */
  playerOptions?: Omit<PlayerDeps, 'device' | 'logger'>;
  player?: Player;
  /** `speech.started` and `speech.finished` go here (events/). */
  events?: EventPublisher;
  /** How long stop() lets the current utterance finish before cutting it. Default 5 s. */
  stopTimeoutMs?: number;
  /** The waiting player process is started once this resolves (the daemon: after READY=1). */
  warmUpAfter?: Promise<void>;
}

export interface Speech {
  start(): Promise<void>;
  stop(): Promise<void>;
  say(request: SayRequest): Promise<SayResult>;
  /** Waits for the current utterance, then keeps the queue paused until the returned function is called. */
  hold(): Promise<() => void>;
  status(): SpeechStatus;
}

interface Item {
  id: number;
  params: TtsParams;
  key: string;
  acceptedAt: number;
  abort: AbortController;
  resolve(r: SayResult): void;
  reject(e: unknown): void;
  source: 'cache' | 'service' | 'pending';
  startedAt?: number;
}

export function createSpeech(deps: SpeechDeps): Speech {
  const { config, logger } = deps;
  const device = config.audio.output_device;
  const disk = createDiskFloor(config.state_dir, config.state_min_free ?? 'auto');
  const cache = createTtsCache({ db: deps.db, dir: join(config.state_dir, 'tts'), maxBytes: config.tts.cache_size, logger, disk });
  const player = deps.player ?? createPlayer({ device, logger, ...deps.playerOptions });
  const metrics = createSpeechMetrics(deps.metrics, { queueLength: () => queue.length, cacheStats: () => cache.stats() });
  const stallTimeoutMs = config.service?.request_timeout ?? 15_000;

  const queue: Item[] = [];
  let current: Item | undefined;
  let nextId = 1;
  let holds = 0;
  let pumping = false;
  let started: Promise<void> | undefined;
  let stopping = false;
  let idleWaiters: Array<() => void> = [];
  let playedTotal = 0;
  let failedTotal = 0;
  let lastError: SpeechStatus['last_error'] = null;

  function start(): Promise<void> {
    started ??= (async () => {
      // Speech works without its cache: a state_dir problem only costs offline replay.
      await cache.init().catch((err: unknown) => logger.warn({ err: describeError(err) }, 'TTS cache unavailable'));
      // A player process started during the daemon's start-up competes with it for the CPU.
      if (deps.warmUpAfter) void deps.warmUpAfter.then(() => player.warmUp(), () => undefined);
      else player.warmUp();
      logger.debug({ device }, 'speech started');
    })();
    return started;
  }

  function interrupted(item: Item, reason: string): SayResult {
    return { id: item.id, outcome: 'interrupted', queued_ms: Math.round((item.startedAt ?? performance.now()) - item.acceptedAt), reason };
  }

  function dropQueue(reason: string): void {
    for (const item of queue.splice(0)) {
      metrics.utterances.inc({ result: 'interrupted' });
      item.resolve(interrupted(item, reason));
    }
  }

  // Not async: the utterance joins the queue synchronously, so that order is the order of calls.
  function say(request: SayRequest): Promise<SayResult> {
    let params: TtsParams;
    try {
      params = resolveTtsParams(request, config.tts);
    } catch (err) {
      return Promise.reject(err);
    }
    if (stopping) return Promise.reject(new BusyError('speech is stopping (the daemon is shutting down); try again when it is back'));
    if (request.interrupt) {
      dropQueue('interrupted by a newer request');
      current?.abort.abort(new AbortedError('interrupted by a newer request'));
    }
    return new Promise<SayResult>((resolve, reject) => {
      const item: Item = { id: nextId++, params, key: ttsCacheKey(params), acceptedAt: performance.now(), abort: new AbortController(), resolve, reject, source: 'pending' };
      const signal = request.signal;
      if (signal) {
        const onGiveUp = () => {
          const i = queue.indexOf(item);
          if (i >= 0) {
            queue.splice(i, 1);
            resolve(interrupted(item, 'the caller gave up'));
          } else item.abort.abort(new AbortedError('the caller gave up'));
        };
        if (signal.aborted) return resolve(interrupted(item, 'the caller gave up'));
        signal.addEventListener('abort', onGiveUp, { once: true });
        const done = () => signal.removeEventListener('abort', onGiveUp);
        item.resolve = (r) => (done(), resolve(r));
        item.reject = (e) => (done(), reject(e));
      }
      queue.push(item);
      void pump();
    });
  }

  async function pump(): Promise<void> {
    if (pumping) return;
    pumping = true;
    try {
      await start();
      while (queue.length > 0 && holds === 0 && !stopping) {
        const item = queue.shift()!;
        current = item;
        await run(item);
        current = undefined;
      }
    } finally {
      pumping = false;
      current = undefined;
      for (const w of idleWaiters.splice(0)) w();
    }
  }

  async function run(item: Item): Promise<void> {
    item.startedAt = performance.now();
    let firstFrameMs: number | undefined;
    try {
      const report = await playUtterance({ client: deps.client, cache, player, logger, stallTimeoutMs, limits: config.tts }, item.params, item.key, {
        signal: item.abort.signal,
        onSource: (s) => {
          item.source = s;
          deps.events?.publish('speech.started', { id: item.id, ...(item.params.voice ? { voice: item.params.voice } : {}), cached: s === 'cache' });
          (s === 'cache' ? metrics.cacheHits : metrics.cacheMisses).inc();
        },
        onFirstFrame: () => {
          firstFrameMs = performance.now() - item.acceptedAt;
          metrics.firstFrame.observe({ source: item.source }, (performance.now() - item.startedAt!) / 1000);
        },
      });
      playedTotal += 1;
      metrics.utterances.inc({ result: 'played' });
      logger.info({ id: item.id, source: report.source, audio_ms: Math.round(report.audioMs), first_frame_ms: firstFrameMs && Math.round(firstFrameMs), cached: report.cached }, 'utterance played');
      deps.events?.publish('speech.finished', { id: item.id, outcome: 'played', audio_ms: Math.round(report.audioMs) });
      item.resolve({
        id: item.id,
        outcome: 'played',
        source: report.source,
        ...(firstFrameMs !== undefined ? { first_frame_ms: Math.round(firstFrameMs * 10) / 10 } : {}),
        audio_ms: Math.round(report.audioMs),
        bytes: report.bytes,
        queued_ms: Math.round(item.startedAt - item.acceptedAt),
      });
    } catch (err) {
      if (item.abort.signal.aborted) {
        metrics.utterances.inc({ result: 'interrupted' });
        const reason = item.abort.signal.reason instanceof Error ? item.abort.signal.reason.message : 'stopped';
        logger.info({ id: item.id, reason }, 'utterance interrupted');
        deps.events?.publish('speech.finished', { id: item.id, outcome: 'interrupted', reason });
        item.resolve({ ...interrupted(item, reason), ...(item.source !== 'pending' ? { source: item.source } : {}) });
        return;
      }
      failedTotal += 1;
      metrics.utterances.inc({ result: 'failed' });
      const code = isAgentError(err) ? err.code : 'TA_ERR_FAILURE';
      if (code === 'TA_ERR_AUDIO_DEVICE') metrics.deviceErrors.inc({ role: 'output' });
      lastError = { code, message: describeError(err), at: new Date().toISOString() };
      logger.warn({ id: item.id, code, err: describeError(err) }, 'utterance failed');
      // How it ended and the device's own words (ALSA's lines), for whoever looks into it.
      if (isAgentError(err) && Object.keys(err.details).length > 0) logger.debug({ id: item.id, code, ...err.details }, 'utterance failed: details');
      deps.events?.publish('speech.finished', { id: item.id, outcome: 'failed', code, reason: lastError.message });
      item.reject(err);
    }
  }

  function whenIdle(): Promise<void> {
    if (!pumping) return Promise.resolve();
    return new Promise((resolve) => idleWaiters.push(resolve));
  }

  async function hold(): Promise<() => void> {
    holds += 1;
    await whenIdle();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      holds -= 1;
      if (holds === 0) void pump();
    };
  }

  let stopped: Promise<void> | undefined;
  function stop(): Promise<void> {
    stopped ??= stopNow();
    return stopped;
  }

  async function stopNow(): Promise<void> {
    stopping = true;
    for (const item of queue.splice(0)) item.reject(new BusyError('speech stopped before this utterance was played (the daemon is shutting down)'));
    const bound = deps.stopTimeoutMs ?? 5000;
    const timer = setTimeout(() => current?.abort.abort(new AbortedError('speech is stopping')), bound);
    try {
      await whenIdle();
    } finally {
      clearTimeout(timer);
    }
    await player.close();
    idleWaiters = [];
  }

  function status(): SpeechStatus {
    return {
      state: stopping ? 'stopped' : current ? 'playing' : holds > 0 ? 'held' : 'idle',
      device,
      playing: current
        ? { id: current.id, text: current.params.text.length > 80 ? `${current.params.text.slice(0, 77)}...` : current.params.text, source: current.source, since: new Date(performance.timeOrigin + (current.startedAt ?? current.acceptedAt)).toISOString() }
        : null,
      queued: queue.length,
      held: holds > 0,
      played_total: playedTotal,
      failed_total: failedTotal,
      last_error: lastError,
      cache: cache.stats(),
    };
  }

  return { start, stop, say, hold, status };
}
