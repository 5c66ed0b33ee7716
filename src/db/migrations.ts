// Numbered schema migrations, applied in order by openDatabase (PRAGMA user_version holds the
// last one applied). A released migration is never edited: add a new one at the end.
// Until the first release, version 1 is still being shaped, one block per capability.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

// Face cache (src/faces): one row per face of the terminal's group, as of the last complete sync.
const FACES_V1 = `
CREATE TABLE faces (
  face_id        TEXT PRIMARY KEY,
  group_id       TEXT NOT NULL,
  id             INTEGER,
  name           TEXT NOT NULL,
  image_file     TEXT,             -- file name under state_dir/faces/, NULL until fetched
  image_sha256   TEXT,
  image_etag     TEXT,
  image_last_modified TEXT,
  image_checked_at INTEGER,        -- ms epoch of the last image check against the server
  error          TEXT,             -- last per-face error (bad image...), NULL when fine
  updated_at     INTEGER NOT NULL
);
CREATE TABLE sync_runs (
  id          INTEGER PRIMARY KEY,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER,
  duration_ms INTEGER,
  ok          INTEGER NOT NULL DEFAULT 0,
  added       INTEGER NOT NULL DEFAULT 0,
  updated     INTEGER NOT NULL DEFAULT 0,
  removed     INTEGER NOT NULL DEFAULT 0,
  failed      INTEGER NOT NULL DEFAULT 0,
  image_requests INTEGER NOT NULL DEFAULT 0,
  error       TEXT,
  error_code  TEXT
);
`;

// Upload outbox (src/enroll): every file taken from an enrollment folder, from claim to done/failed.
const OUTBOX_V1 = `
CREATE TABLE outbox (
  id            INTEGER PRIMARY KEY,
  kind          TEXT NOT NULL,      -- faces | voiceprints | speakers | knowledge
  name          TEXT NOT NULL,      -- NAME, LABEL or knowledge ID
  source_path   TEXT NOT NULL,      -- as dropped, relative to enroll.dir
  staged_path   TEXT,               -- the copy under state_dir that the upload reads
  content_sha256 TEXT NOT NULL,
  size          INTEGER NOT NULL,
  state         TEXT NOT NULL,      -- queued | sending | unknown | training | done | failed
  attempts      INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  started_at    INTEGER,            -- ms epoch when the current attempt started (reconciliation)
  last_error    TEXT,
  last_error_code TEXT,
  last_status   INTEGER,
  result_json   TEXT,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
);
CREATE INDEX outbox_state ON outbox(state, next_attempt_at);
CREATE INDEX outbox_hash ON outbox(kind, content_sha256);
`;

// Local registry (src/enroll, src/audio): the API has no list calls for these.
const REGISTRY_V1 = `
CREATE TABLE voiceprints (
  voiceprint_id TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  info_json     TEXT NOT NULL,      -- voiceprint_info as the service returned it
  source        TEXT NOT NULL,      -- enroll | folder | cli
  audit_wav     TEXT,               -- the WAV sent, kept under state_dir for audit
  created_at    INTEGER NOT NULL
);
CREATE TABLE speakers (
  speaker_id TEXT NOT NULL,
  model      TEXT NOT NULL,
  label      TEXT,
  status     INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (model, speaker_id)
);
`;

// Synthesized audio kept for offline replay (src/audio): LRU by last_used_at, bounded in bytes.
const TTS_CACHE_V1 = `
CREATE TABLE tts_cache (
  key          TEXT PRIMARY KEY,    -- sha256 of text, voice and ratios
  file         TEXT NOT NULL,       -- file name under state_dir/tts/
  bytes        INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL
);
CREATE INDEX tts_cache_lru ON tts_cache(last_used_at);
`;

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial schema', sql: FACES_V1 + OUTBOX_V1 + REGISTRY_V1 + TTS_CACHE_V1 },
];
