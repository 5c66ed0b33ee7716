// The one schema of the agent's YAML configuration: it gives the AgentConfig type, the defaults
// and the validation. Objects are strict so a misspelt key is reported (load-config adds the
// did-you-mean and the line). Durations come out in milliseconds, sizes in bytes.
//
// Secrets are resolved by load-config before this schema runs (env, systemd credentials, *_file,
// inline): the schema sees the resolved `terminal_secret`/`api_key` and drops the `*_file` keys.
import { join } from 'node:path';
import { DEFAULT_CONTROL_SOCKET } from './control-socket.js';
import { DEFAULT_STATE_DIR } from './state-dir.js';
import * as z from 'zod';
import { baseUrl, bool, choice, decimal, duration, integer, listenAddress, minFree, secretText, size, text } from './schema-fields.js';
import { isLoopbackHost } from './plain-checks.js';
import { parsePasswordHash } from '../util/password-hash-format.js';
import { isLoopbackListen, parseConsoleListen } from './listen-address.js';

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
  terminal_secret: secretText().optional(),
  terminal_secret_file: text('the path of a file holding the terminal secret').min(1, 'is empty: set a path or remove the key').optional(),
  api_key: secretText().optional(),
  api_key_file: text('the path of a file holding the API key').min(1, 'is empty: set a path or remove the key').optional(),
  request_timeout: duration(100, 10 * MINUTE).default(15 * SECOND),
  ca_file: text('the path of a PEM CA bundle, or "" for none').default(''),
  allow_insecure_http: bool().default(false),
  retries: integer(0, 10).default(4),
  other_auth: choice(['none', 'terminal_secret', 'api_key']).default('none'),
};

const facesShape = {
  sync_interval: duration(1 * SECOND, 7 * DAY).default(5 * MINUTE),
  image_recheck_interval: duration(1 * MINUTE, 30 * DAY).default(6 * HOUR),
  download_concurrency: integer(1, 64).default(8),
};

const enrollShape = {
  /** Absent: `<state_dir>/enroll`, filled in by the top-level transform. */
  dir: text('a folder path').min(1, 'is empty: set a folder or remove the key for <state_dir>/enroll').optional(),
  on_existing_face: choice(['update', 'create', 'skip']).default('update'),
  max_file_size: size(1 * KB, 1 * GB).default(20 * MB),
  rescan_interval: duration(1 * SECOND, 1 * DAY).default(30 * SECOND),
  settle_time: duration(0, 10 * MINUTE).default(1 * SECOND),
  upload_concurrency: integer(1, 32).default(4),
  knowledge_debounce: duration(0, 10 * MINUTE).default(2 * SECOND),
};

const ttsShape = {
  voice: text('a voice name, or "" for the service default').default(''),
  volume_ratio: decimal(0, 100).default(50),
  speed_ratio: decimal(0, 100).default(50),
  pitch_ratio: decimal(0, 100).default(50),
  cache_size: size(0, 10 * GB).default(64 * MB),
};

const audioShape = {
  output_device: text('an ALSA PCM name such as default or plughw:1,0').min(1, 'is empty: use default or an ALSA PCM name').default('default'),
  input_device: text('an ALSA PCM name such as default or plughw:1,0').min(1, 'is empty: use default or an ALSA PCM name').default('default'),
};

const voiceprintShape = {
  model: text('a voiceprint model name').min(1, 'is empty: e.g. voiceprint-turbo').default('voiceprint-turbo'),
  sample_rate: integer(8000, 48000).default(16000),
  seconds: decimal(1, 60).default(8),
  recorder: choice(['arecord', 'sox']).default('arecord'),
};

const speakerTrainingShape = {
  model: text('a TTS model name').min(1, 'is empty: e.g. tts-turbo').default('tts-turbo'),
  poll_interval: duration(100, 10 * MINUTE).default(2 * SECOND),
  poll_timeout: duration(1 * SECOND, 1 * DAY).default(10 * MINUTE),
};

const controlShape = {
  socket: text('a unix socket path')
    .min(1, 'is empty: e.g. /run/terminal-agent/control.sock')
    .refine((s) => Buffer.byteLength(s) <= MAX_SOCKET_PATH, `is longer than ${MAX_SOCKET_PATH} bytes, the limit of a unix socket path: choose a shorter path`)
    .default(DEFAULT_CONTROL_SOCKET),
};

const consoleShape = {
  /** '' = off. Checked against a login in load-config (a systemd credential may give the password). */
  listen: text('an address such as 127.0.0.1:8080, or "" for off').default('').refine((v) => v.trim() === '' || typeof parseConsoleListen(v) !== 'string', {
    error: (iss) => String(parseConsoleListen(String(iss.input))),
  }),
  password_hash: text('an scrypt hash from terminal-agent console hash-password').default('').refine((v) => v === '' || parsePasswordHash(v) !== undefined, {
    error: 'is not a password hash made by `terminal-agent console hash-password` ($scrypt$ln=...,r=...,p=...$SALT$HASH); never write the password itself here',
  }),
  tls_cert_file: text('the path of a PEM certificate (chain), or "" for plain http').default(''),
  tls_key_file: text('the path of the PEM private key of tls_cert_file, or ""').default(''),
  session_ttl: duration(1 * MINUTE, 30 * DAY).default(12 * HOUR),
};

const consoleSchema = z
  .strictObject(consoleShape, { error: () => 'must be a mapping of keys (e.g. console:\n  listen: 127.0.0.1:8080), or be removed for the defaults' })
  .refine((c) => (c.tls_cert_file === '') === (c.tls_key_file === ''), {
    path: ['tls_key_file'],
    error: 'tls_cert_file and tls_key_file go together: set both for https, or neither for plain http',
  })
  // Filled in by load-config from $CREDENTIALS_DIRECTORY/console_password (never from the YAML).
  .transform((c) => ({ ...c, password_credential: null as string | null }))
  .prefault({} as never);

const metricsShape = {
  /** Absent: no TCP listener (the control socket still serves /metrics). */
  listen: listenAddress('127.0.0.1:9464').optional(),
  allow_remote: bool().default(false),
};

// /metrics tells whoever reaches it what this terminal holds and does: off the loopback interface
// only when the operator says so in the same file.
const metricsSchema = section(metricsShape, 'metrics').refine((m) => m.listen === undefined || m.allow_remote || isLoopbackListen(m.listen), {
  path: ['listen'],
  error: (iss) => `${(iss.input as { listen?: string }).listen} is not a loopback address: /metrics would be open to the network; listen on 127.0.0.1:PORT, or set metrics.allow_remote: true to serve it there (and restrict who can reach the port)`,
});

const logShape = {
  level: choice(LOG_LEVELS).default('info'),
  format: choice(['auto', 'json', 'journal'] as const).default('auto'),
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

const serviceSchema = z
  .strictObject(serviceShape, { error: (iss) => (iss.input === undefined ? 'is required: add a service: section with base_url and face_base_url' : 'must be a mapping of keys (base_url: ..., face_base_url: ...)') })
  .refine((s) => !insecureHost(s, 'base_url'), insecureCheck('base_url'))
  .refine((s) => !insecureHost(s, 'face_base_url'), insecureCheck('face_base_url'))
  .transform(({ terminal_secret_file: _tf, api_key_file: _af, ...rest }) => rest);

function section<T extends z.core.$ZodLooseShape>(shape: T, name: string) {
  return z.strictObject(shape, { error: () => `must be a mapping of keys (e.g. ${name}:\\n  ${Object.keys(shape)[0]}: ...), or be removed for the defaults` }).prefault({} as never); // every key has a default, so {} is valid input
}

const rootShape = {
  service: serviceSchema,
  state_dir: text('a folder path').min(1, 'is empty: e.g. /var/lib/terminal-agent').default(DEFAULT_STATE_DIR),
  state_min_free: minFree().default('auto'),
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

export const configSchema = z
  .strictObject(rootShape, { error: () => 'the file must be a YAML mapping of sections (service:, state_dir:, ...)' })
  .transform((c) => ({ ...c, enroll: { ...c.enroll, dir: c.enroll.dir ?? join(c.state_dir, 'enroll') } }));

/** The resolved configuration every component codes against. `file` is the YAML it came from. */
export type AgentConfig = z.output<typeof configSchema> & { file?: string };
/** What the YAML may hold (before defaults and units). */
export type AgentConfigInput = z.input<typeof configSchema>;

/** Known keys per section ('' = top level), for unknown-key did-you-mean and the example test. */
export const KNOWN_KEYS: Readonly<Record<string, readonly string[]>> = {
  '': Object.keys(rootShape),
  service: Object.keys(serviceShape),
  faces: Object.keys(facesShape),
  enroll: Object.keys(enrollShape),
  tts: Object.keys(ttsShape),
  audio: Object.keys(audioShape),
  voiceprint: Object.keys(voiceprintShape),
  speaker_training: Object.keys(speakerTrainingShape),
  control: Object.keys(controlShape),
  console: Object.keys(consoleShape),
  log: Object.keys(logShape),
  metrics: Object.keys(metricsShape),
};
