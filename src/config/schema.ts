// The one schema of the agent's YAML configuration: it gives the AgentConfig type, the defaults
// and the validation. Objects are strict so a misspelt key is reported (load-config adds the
// did-you-mean and the line). Durations come out in milliseconds, sizes in bytes.
//
// Secrets are resolved by load-config before this schema runs (env, systemd credentials, *_file,
// inline): the schema sees the resolved `terminal_secret`/`api_key` and drops the `*_file` keys.
//
// Written with zod/mini's functions (z._default(x, v), x.check(...), z.pipe(x, z.transform(...)))
// rather than the classic API's chained methods: the same core and messages, and every command
// that reads the config builds this schema once, cold, where a classic schema object cost about
// three times as much to make.
import { join } from 'node:path';
import { DEFAULT_CONTROL_SOCKET } from './control-socket.js';
import * as z from 'zod/mini';
import { baseUrl, bool, choice, decimal, duration, integer, listenAddress, minFree, secretText, size, text } from './schema-fields.js';
import { isLoopbackHost } from './plain-checks.js';
import { parsePasswordHash } from '../util/password-hash-format.js';
import { isLoopbackListen, parseConsoleListen } from './listen-address.js';

const DEFAULT_STATE_DIR = '/var/lib/terminal-agent';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const KB = 1024;
const MB = 1024 * KB;
const GB = 1024 * MB;

/** Longest path a unix socket address can hold (sun_path is 108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const serviceShape = {
  base_url: baseUrl('https://api.example.com'),
  face_base_url: baseUrl('https://api.example.com/v1/api', { mustEndWith: '/v1/api' }),
  terminal_secret: z.optional(secretText()),
  terminal_secret_file: z.optional(text('the path of a file holding the terminal secret').check(z.minLength(1, 'is empty: set a path or remove the key'))),
  api_key: z.optional(secretText()),
  api_key_file: z.optional(text('the path of a file holding the API key').check(z.minLength(1, 'is empty: set a path or remove the key'))),
  request_timeout: z._default(duration(100, 10 * MINUTE), 15 * SECOND),
  ca_file: z._default(text('the path of a PEM CA bundle, or "" for none'), ''),
  allow_insecure_http: z._default(bool(), false),
  retries: z._default(integer(0, 10), 4),
  other_auth: z._default(choice(['none', 'terminal_secret', 'api_key']), 'none'),
};

const facesShape = {
  sync_interval: z._default(duration(1 * SECOND, 7 * DAY), 5 * MINUTE),
  image_recheck_interval: z._default(duration(1 * MINUTE, 30 * DAY), 6 * HOUR),
  download_concurrency: z._default(integer(1, 64), 8),
  /** Image re-checks (conditional GETs) a terminal may send per minute (faces/recheck-pacer.ts). */
  recheck_requests_per_minute: z._default(integer(1, 6000), 200),
  /** Bytes re-checks may download per hour from a service that answers no conditional request. */
  recheck_bytes_per_hour: z._default(size(1 * MB, 100 * GB), 64 * MB),
};

/**
 * The face check before a face image is uploaded (src/facecheck/). The defaults come from the
 * labelled set test/fixtures/faces/ (its README gives the measurements): every good portrait
 * clears them with room, every bad variant misses one.
 */
const faceCheckShape = {
  mode: z._default(choice(['refuse', 'warn', 'off'] as const), 'refuse'),
  min_face_px: z._default(integer(16, 4096), 80),
  min_sharpness: z._default(decimal(0, 100000), 40),
  min_brightness: z._default(decimal(0, 255), 50),
  max_brightness: z._default(decimal(0, 255), 195),
  max_clipped: z._default(decimal(0, 1), 0.1),
};

const enrollShape = {
  /** Absent: `<state_dir>/enroll`, filled in by the top-level transform. */
  dir: z.optional(text('a folder path').check(z.minLength(1, 'is empty: set a folder or remove the key for <state_dir>/enroll'))),
  on_existing_face: z._default(choice(['update', 'create', 'skip']), 'update'),
  max_file_size: z._default(size(1 * KB, 1 * GB), 20 * MB),
  rescan_interval: z._default(duration(1 * SECOND, 1 * DAY), 30 * SECOND),
  settle_time: z._default(duration(0, 10 * MINUTE), 1 * SECOND),
  upload_concurrency: z._default(integer(1, 32), 4),
  knowledge_debounce: z._default(duration(0, 10 * MINUTE), 2 * SECOND),
  face_check: section(faceCheckShape, 'face_check'),
};

const ttsShape = {
  voice: z._default(text('a voice name, or "" for the service default'), ''),
  volume_ratio: z._default(decimal(0, 100), 50),
  speed_ratio: z._default(decimal(0, 100), 50),
  pitch_ratio: z._default(decimal(0, 100), 50),
  cache_size: z._default(size(0, 10 * GB), 64 * MB),
  // One answer's bounds: a service that never ends its answer, or whose WAV header claims 4 GiB,
  // holds neither the queue nor the disk. Audio allowed: 10 s plus max_duration_per_char for each
  // character of the text (several times any real speaking rate), at most max_duration.
  max_duration_per_char: z._default(duration(10, 1 * MINUTE), 500),
  max_duration: z._default(duration(1 * SECOND, 1 * DAY), 10 * MINUTE),
  max_size: z._default(size(64 * KB, 1 * GB), 64 * MB),
};

const audioShape = {
  output_device: z._default(text('an ALSA PCM name such as default or plughw:1,0').check(z.minLength(1, 'is empty: use default or an ALSA PCM name')), 'default'),
  input_device: z._default(text('an ALSA PCM name such as default or plughw:1,0').check(z.minLength(1, 'is empty: use default or an ALSA PCM name')), 'default'),
};

const voiceprintShape = {
  model: z._default(text('a voiceprint model name').check(z.minLength(1, 'is empty: e.g. voiceprint-turbo')), 'voiceprint-turbo'),
  sample_rate: z._default(integer(8000, 48000), 16000),
  seconds: z._default(decimal(1, 60), 8),
  recorder: z._default(choice(['arecord', 'sox']), 'arecord'),
};

const speakerTrainingShape = {
  model: z._default(text('a TTS model name').check(z.minLength(1, 'is empty: e.g. tts-turbo')), 'tts-turbo'),
  poll_interval: z._default(duration(100, 10 * MINUTE), 2 * SECOND),
  poll_timeout: z._default(duration(1 * SECOND, 1 * DAY), 10 * MINUTE),
};

const controlShape = {
  socket: z._default(
    text('a unix socket path').check(
      z.minLength(1, 'is empty: e.g. /run/terminal-agent/control.sock'),
      z.refine((s) => Buffer.byteLength(s) <= MAX_SOCKET_PATH, `is longer than ${MAX_SOCKET_PATH} bytes, the limit of a unix socket path: choose a shorter path`),
    ),
    DEFAULT_CONTROL_SOCKET,
  ),
};

const consoleShape = {
  /** '' = off. Checked against a login in load-config (a systemd credential may give the password). */
  listen: z._default(text('an address such as 127.0.0.1:8080, or "" for off'), '').check(z.refine((v) => v.trim() === '' || typeof parseConsoleListen(v) !== 'string', {
    error: (iss) => String(parseConsoleListen(String(iss.input))),
  })),
  password_hash: z._default(text('an scrypt hash from terminal-agent console hash-password'), '').check(z.refine((v) => v === '' || parsePasswordHash(v) !== undefined, {
    error: 'is not a password hash made by `terminal-agent console hash-password` ($scrypt$ln=...,r=...,p=...$SALT$HASH); never write the password itself here',
  })),
  tls_cert_file: z._default(text('the path of a PEM certificate (chain), or "" for plain http'), ''),
  tls_key_file: z._default(text('the path of the PEM private key of tls_cert_file, or ""'), ''),
  session_ttl: z._default(duration(1 * MINUTE, 30 * DAY), 12 * HOUR),
};

const consoleSchema = z.prefault(
  z.pipe(
    z.strictObject(consoleShape, { error: () => 'must be a mapping of keys (e.g. console:\n  listen: 127.0.0.1:8080), or be removed for the defaults' }).check(
      z.refine((c) => (c.tls_cert_file === '') === (c.tls_key_file === ''), {
        path: ['tls_key_file'],
        error: 'tls_cert_file and tls_key_file go together: set both for https, or neither for plain http',
      }),
    ),
    // Filled in by load-config from $CREDENTIALS_DIRECTORY/console_password (never from the YAML).
    z.transform((c) => ({ ...c, password_credential: null as string | null })),
  ),
  {} as never,
);

const metricsShape = {
  /** Absent: no TCP listener (the control socket still serves /metrics). */
  listen: z.optional(listenAddress('127.0.0.1:9464')),
  allow_remote: z._default(bool(), false),
};

// /metrics tells whoever reaches it what this terminal holds and does: off the loopback interface
// only when the operator says so in the same file.
const metricsSchema = section(metricsShape, 'metrics').check(z.refine((m) => m.listen === undefined || m.allow_remote || isLoopbackListen(m.listen), {
  path: ['listen'],
  error: (iss) => `${(iss.input as { listen?: string }).listen} is not a loopback address: /metrics would be open to the network; listen on 127.0.0.1:PORT, or set metrics.allow_remote: true to serve it there (and restrict who can reach the port)`,
}));

const logShape = {
  level: z._default(choice(LOG_LEVELS), 'info'),
  format: z._default(choice(['auto', 'json', 'journal'] as const), 'auto'),
};

type UrlKey = 'base_url' | 'face_base_url';

/** The non-loopback host a plain http:// URL would send credentials to, unless allowed. */
function insecureHost(s: { base_url?: unknown; face_base_url?: unknown; allow_insecure_http?: unknown }, key: UrlKey): string | undefined {
  if (s.allow_insecure_http === true) return undefined;
  const v = s[key];
  if (typeof v !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return undefined; // the field's own check reports it
  }
  return url.protocol === 'http:' && !isLoopbackHost(url.hostname) ? url.hostname : undefined;
}

// A terminal secret must not cross a network in clear: plain http only to this machine. `when`
// makes the check run even if other service keys have problems, so all are reported at once.
function insecureCheck(key: UrlKey) {
  return {
    path: [key],
    when: (p: { value: unknown }) => typeof p.value === 'object' && p.value !== null,
    error: (iss: { input?: unknown }) =>
      `plain http:// to ${insecureHost(iss.input as Record<string, unknown>, key) ?? 'this host'} would send credentials in clear: use https://, or set service.allow_insecure_http: true if this network is trusted`,
  };
}

const serviceSchema = z.pipe(
  z.strictObject(serviceShape, { error: (iss) => (iss.input === undefined ? 'is required: add a service: section with base_url and face_base_url' : 'must be a mapping of keys (base_url: ..., face_base_url: ...)') }).check(
    z.refine((s) => !insecureHost(s, 'base_url'), insecureCheck('base_url')),
    z.refine((s) => !insecureHost(s, 'face_base_url'), insecureCheck('face_base_url')),
  ),
  z.transform(({ terminal_secret_file: _tf, api_key_file: _af, ...rest }) => rest),
);

function section<T extends z.core.$ZodLooseShape>(shape: T, name: string) {
  // every key has a default, so {} is valid input
  return z.prefault(z.strictObject(shape, { error: () => `must be a mapping of keys (e.g. ${name}:\\n  ${Object.keys(shape)[0]}: ...), or be removed for the defaults` }), {} as never);
}

const rootShape = {
  service: serviceSchema,
  state_dir: z._default(text('a folder path').check(z.minLength(1, 'is empty: e.g. /var/lib/terminal-agent')), DEFAULT_STATE_DIR),
  state_min_free: z._default(minFree(), 'auto'),
  faces: section(facesShape, 'faces'),
  enroll: section(enrollShape, 'enroll'),
  tts: section(ttsShape, 'tts'),
  audio: section(audioShape, 'audio'),
  voiceprint: section(voiceprintShape, 'voiceprint'),
  speaker_training: section(speakerTrainingShape, 'speaker_training'),
  control: section(controlShape, 'control'),
  console: consoleSchema,
  log: section(logShape, 'log'),
  metrics: metricsSchema,
};

export const configSchema = z.pipe(
  z.strictObject(rootShape, { error: () => 'the file must be a YAML mapping of sections (service:, state_dir:, ...)' }),
  z.transform((c) => ({ ...c, enroll: { ...c.enroll, dir: c.enroll.dir ?? join(c.state_dir, 'enroll') } })),
);

/** The resolved configuration every component codes against. `file` is the YAML it came from. */
export type AgentConfig = z.output<typeof configSchema> & { file?: string };

/** Known keys per section ('' = top level), for unknown-key did-you-mean and the example test. */
export const KNOWN_KEYS: Readonly<Record<string, readonly string[]>> = {
  '': Object.keys(rootShape),
  service: Object.keys(serviceShape),
  faces: Object.keys(facesShape),
  enroll: Object.keys(enrollShape),
  'enroll.face_check': Object.keys(faceCheckShape),
  tts: Object.keys(ttsShape),
  audio: Object.keys(audioShape),
  voiceprint: Object.keys(voiceprintShape),
  speaker_training: Object.keys(speakerTrainingShape),
  control: Object.keys(controlShape),
  console: Object.keys(consoleShape),
  log: Object.keys(logShape),
  metrics: Object.keys(metricsShape),
};
