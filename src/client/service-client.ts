import type { Logger } from 'pino';
import type { BackoffPolicy } from '../util/backoff.js';
import { createHttpCore } from './http-core.js';
import { ciphersFor, cpuHasAes, readCpuinfo } from './tls-ciphers.js';
import { createTransport, type ProxyEnv, type ServiceConfig } from './transport.js';
import { facesApi } from './faces-api.js';
import { knowledgeNotifyApi } from './knowledge-notify-api.js';
import { ttsApi } from './tts-api.js';
import { speakerVoiceprintApi } from './speaker-voiceprint-api.js';
import type { RequestEvent, ServiceClient } from './types.js';

export type { ServiceConfig, ProxyEnv } from './transport.js';
export { checkFaceId } from './faces-api.js';

export interface ServiceClientDeps {
  /** AgentConfig['service']. */
  config: ServiceConfig;
  logger: Logger;
  /** `terminal-agent/<version>` (src/version.ts userAgent()). */
  userAgent: string;
  /** Called once per HTTP attempt (metrics, debug). */
  onRequest?: (event: RequestEvent) => void;
  /**
   * A part of the program the client reads when first needed (undici) was found gone: the call
   * fails with a NetworkError (not sent) naming the file, and this is told too.
   */
  onProgramReplaced?: (err: unknown, operation: string) => void;
  /** HTTPS_PROXY/HTTP_PROXY/NO_PROXY (either case); the client never reads process.env. */
  env?: ProxyEnv;
  /** Retry delays; the default starts at 250 ms and caps at 8 s. */
  backoff?: BackoffPolicy;
  /** Longest Retry-After waited for inside one call (default 60 s); longer ones fail the call with retryAfterMs set. */
  maxRetryAfterMs?: number;
  /**
   * Whether this CPU has AES instructions (tls-ciphers.ts: without them ChaCha20-Poly1305 is
   * offered first). Read from /proc/cpuinfo when not given, and only when a base URL is https.
   */
  cpuHasAes?: boolean;
}

/**
 * The typed client of the cloud API. Throws ServiceError subclasses for anything the service or
 * the network did, ConfigError for a missing credential or a refused base URL, InvalidInputError
 * for input it will not send (a face id that is not 32 hex, a file whose bytes do not match its
 * type), AbortedError when the caller's signal fires.
 */
export function createServiceClient(deps: ServiceClientDeps): ServiceClient {
  const https = [deps.config.base_url, deps.config.face_base_url].some((u) => /^https:/i.test(u));
  const hasAes = deps.cpuHasAes ?? (https ? cpuHasAes(readCpuinfo()) : true);
  if (!hasAes) deps.logger.debug('no AES instructions on this CPU (/proc/cpuinfo): TLS offers ChaCha20-Poly1305 first');
  const transport = createTransport(deps.config, deps.env ?? {}, deps.config.request_timeout, ciphersFor(hasAes));
  const core = createHttpCore({ ...deps, transport });
  let closing: Promise<void> | undefined;
  return {
    ...facesApi(core),
    ...knowledgeNotifyApi(core),
    ...ttsApi(core),
    ...speakerVoiceprintApi(core),
    close() {
      closing ??= transport.close();
      return closing;
    },
  };
}
