import { Counter, Gauge, Histogram, type Registry } from '../metrics/prom.js';

// Speech metrics, registered on the Registry the daemon gives (never prom-client's global one).

export interface SpeechMetrics {
  utterances: Counter<'result'>;
  firstFrame: Histogram<'source'>;
  cacheHits: Counter;
  cacheMisses: Counter;
  /** Utterances that failed on the audio device (not on the service). */
  deviceErrors: Counter<'role'>;
}

export function createSpeechMetrics(
  registry: Registry,
  live: { queueLength: () => number; cacheStats: () => { entries: number; bytes: number } },
): SpeechMetrics {
  const registers = [registry];
  new Gauge({
    name: 'terminal_agent_speech_queue_length',
    help: 'Utterances waiting to be played',
    registers,
    collect() {
      this.set(live.queueLength());
    },
  });
  new Gauge({
    name: 'terminal_agent_tts_cache_bytes',
    help: 'Bytes of synthesized audio in the TTS cache',
    registers,
    collect() {
      this.set(live.cacheStats().bytes);
    },
  });
  new Gauge({
    name: 'terminal_agent_tts_cache_entries',
    help: 'Phrases in the TTS cache',
    registers,
    collect() {
      this.set(live.cacheStats().entries);
    },
  });
  return {
    utterances: new Counter({ name: 'terminal_agent_speech_utterances_total', help: 'Utterances by result (played, interrupted, failed)', labelNames: ['result'], registers }),
    firstFrame: new Histogram({
      name: 'terminal_agent_speech_first_frame_seconds',
      help: 'From the start of an utterance to its first frame written to the audio device',
      labelNames: ['source'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    cacheHits: new Counter({ name: 'terminal_agent_tts_cache_hits_total', help: 'Utterances played from the TTS cache', registers }),
    cacheMisses: new Counter({ name: 'terminal_agent_tts_cache_misses_total', help: 'Utterances synthesized by the service', registers }),
    deviceErrors: audioDeviceErrors(registry),
  };
}

/**
 * Failures of the sound card, output (speech) and input (voiceprint recordings) on one counter:
 * speech and voiceprint share the generation's Registry, so the second one reuses the first's.
 */
export function audioDeviceErrors(registry: Registry | undefined): Counter<'role'> {
  const name = 'terminal_agent_audio_device_errors_total';
  const existing = registry?.getSingleMetric(name) as Counter<'role'> | undefined;
  if (existing) return existing;
  const counter = new Counter({ name, help: 'Audio device failures by role: output (speech), input (voiceprint recording)', labelNames: ['role'] as const, registers: registry ? [registry] : [] });
  // Both series exist from the start, so that increase() sees the first failure.
  for (const role of ['output', 'input']) counter.inc({ role }, 0);
  return counter;
}
