import { InvalidInputError, isAgentError } from '../errors.js';
import { WavHeaderScanner, type WavHeaderInfo } from '../audio/wav.js';
import { NotRegularFileError, openRegularFile } from '../util/safe-open.js';

// The checks every WAV the operator hands us goes through before an upload (voiceprint register,
// speaker train, the recordings we make ourselves): a real RIFF/WAVE header with real sizes,
// integer PCM, and a length that makes sense for the call. A file the service would reject, or
// worse accept and train badly on, is refused here with exit 65 and a way to fix it.

export interface WavFileInfo {
  path: string;
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  dataOffset: number;
  dataBytes: number;
  fileBytes: number;
  seconds: number;
}

export interface WavCheckOptions {
  /** How the error names the file, e.g. 'voiceprint audio'. */
  what?: string;
  minSeconds?: number;
  maxSeconds?: number;
}

const READ_CHUNK = 64 * 1024;

export async function checkWavFile(path: string, options: WavCheckOptions = {}): Promise<WavFileInfo> {
  const what = options.what ?? 'WAV file';
  const minSeconds = options.minSeconds ?? 1;
  const maxSeconds = options.maxSeconds ?? 300;
  const fail = (message: string, reason: string, extra: Record<string, unknown> = {}) =>
    new InvalidInputError(`${what} ${path}: ${message}`, { details: { path, reason, ...extra } });

  let fh;
  try {
    // Only a regular file, opened without blocking (a FIFO would wait for a writer forever).
    fh = (await openRegularFile(path)).fh;
  } catch (err) {
    if (err instanceof NotRegularFileError) throw new InvalidInputError(`${what} ${path} is ${err.what}, not a regular file`, { cause: err, details: { path, reason: 'not-a-file' } });
    const code = (err as NodeJS.ErrnoException).code;
    throw new InvalidInputError(`${what} ${path} cannot be read (${code ?? (err as Error).message}); check the path and its permissions`, { cause: err, details: { path, reason: 'unreadable' } });
  }
  let header: WavHeaderInfo | undefined;
  let fileBytes: number;
  try {
    fileBytes = (await fh.stat()).size;
    if (fileBytes === 0) throw fail('the file is empty', 'empty');
    const scanner = new WavHeaderScanner('input');
    const buf = Buffer.alloc(READ_CHUNK);
    let position = 0;
    while (!header) {
      const { bytesRead } = await fh.read(buf, 0, READ_CHUNK, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      header = scanner.push(Buffer.from(buf.subarray(0, bytesRead)));
    }
  } catch (err) {
    if (isAgentError(err) && err.details.path === path) throw err;
    // wav.ts words the problem ("it is encoded as mu-law...") and how to convert.
    if (isAgentError(err)) throw new InvalidInputError(`${what} ${path} is not usable: ${err.message}`, { cause: err, details: { path, reason: 'bad-header' } });
    throw new InvalidInputError(`${what} ${path} cannot be read: ${(err as Error).message}`, { cause: err, details: { path, reason: 'unreadable' } });
  } finally {
    await fh.close();
  }
  if (!header) throw fail(`no WAV data chunk in its ${fileBytes} bytes; it is not a complete WAV file`, 'bad-header');
  if (header.placeholderSizes || header.dataBytes === undefined) {
    throw fail('its header carries placeholder sizes (a streamed recording); rewrite it with `sox IN.wav OUT.wav` first', 'placeholder-sizes');
  }
  const available = fileBytes - header.dataOffset;
  if (header.dataBytes > available) {
    throw fail(`the header announces ${header.dataBytes} bytes of audio but the file holds ${available}; the file is truncated (copy it again)`, 'truncated', { declared: header.dataBytes, available });
  }
  const seconds = header.dataBytes / header.blockAlign / header.sampleRate;
  const info: WavFileInfo = {
    path,
    sampleRate: header.sampleRate,
    channels: header.channels,
    bitsPerSample: header.bitsPerSample,
    dataOffset: header.dataOffset,
    dataBytes: header.dataBytes,
    fileBytes,
    seconds,
  };
  if (seconds < minSeconds) {
    throw fail(`it holds ${seconds.toFixed(2)} s of audio, less than the ${minSeconds} s needed; record a longer sample`, 'too-short', { seconds });
  }
  if (seconds > maxSeconds) {
    throw fail(`it holds ${seconds.toFixed(1)} s of audio, more than the ${maxSeconds} s accepted; trim it with \`sox IN.wav OUT.wav trim 0 ${maxSeconds}\``, 'too-long', { seconds });
  }
  return info;
}

