import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import type { CallOptions, ServiceClient, TtsRequest } from '../client/types.js';
import { NetworkError, isAgentError, describeError } from '../errors.js';
import { WavDecoder } from './wav-decoder.js';
import { WavFileWriter } from './wav-file-writer.js';
import { durationMs } from './wav.js';

export interface SavedWav {
  bytes: number;
  audio_ms: number;
  sample_rate: number;
  channels: number;
  bits_per_sample: number;
}

/**
 * `say --out FILE`: streams POST /tts into FILE (temp file + rename), validating the WAV as it
 * arrives; a cut or non-WAV answer leaves no file behind and fails like playback would.
 */
export async function saveSynthesizedWav(client: Pick<ServiceClient, 'synthesize'>, body: TtsRequest, path: string, opts: CallOptions = {}): Promise<SavedWav> {
  const res = await client.synthesize(body, opts);
  const writer = new WavFileWriter(path);
  const decoder = new WavDecoder({ source: 'service', ...(res.contentLength !== undefined ? { expectedBytes: res.contentLength } : {}) });
  const tee = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      writer.write(chunk);
      cb(null, chunk);
    },
  });
  try {
    // The PCM itself is not needed here: the decoder only validates.
    decoder.resume();
    await pipeline(res.body, tee, decoder);
    const header = decoder.header!;
    const bytes = await writer.commit(header, decoder.dataBytes);
    return {
      bytes,
      audio_ms: Math.round(durationMs(header, decoder.dataBytes)),
      sample_rate: header.sampleRate,
      channels: header.channels,
      bits_per_sample: header.bitsPerSample,
    };
  } catch (err) {
    await writer.abort();
    if (isAgentError(err)) throw err;
    throw new NetworkError(`the POST /tts audio stream broke off after ${decoder.bytesIn} bytes: ${describeError(err)}`, { operation: 'POST /tts', cause: err });
  }
}
