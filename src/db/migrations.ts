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
  image_bytes    INTEGER,
  image_checked_at INTEGER,        -- ms epoch of the last image check against the server
  error          TEXT,             -- last per-face error (bad image...), NULL when fine
  error_code     TEXT,
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
  source_size   INTEGER NOT NULL,   -- size and mtime when claimed: the original is moved to done/
  source_mtime_ms INTEGER NOT NULL, -- or failed/ only if it is still that file
  staged_path   TEXT,               -- the copy under state_dir that the upload reads
  content_sha256 TEXT NOT NULL,     -- '' when the file was refused unread (too large, symlink)
  size          INTEGER NOT NULL,
  action        TEXT,               -- faces: create | update | skip; knowledge: upload | delete
  meta_json     TEXT NOT NULL DEFAULT '{}',
  state         TEXT NOT NULL,      -- queued | sending | unknown | resolving | training | done | failed
  attempts      INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  started_at    INTEGER,            -- ms epoch when the current attempt started (reconciliation)
  last_error    TEXT,
  last_error_code TEXT,
  last_status   INTEGER,
  result_json   TEXT,
  final_path    TEXT,               -- where the original goes in done/ or failed/, chosen once
  finalized     INTEGER NOT NULL DEFAULT 0, -- 1 once the result files are written
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
);
CREATE INDEX outbox_state ON outbox(state, next_attempt_at);
CREATE INDEX outbox_queue ON outbox(state, id);
CREATE INDEX outbox_hash ON outbox(kind, content_sha256);
CREATE INDEX outbox_source ON outbox(source_path, finalized);
CREATE INDEX outbox_name ON outbox(kind, name, state);
CREATE INDEX outbox_pending ON outbox(finalized) WHERE finalized = 0;
-- What the knowledge/ mirror last sent per entry ID, to upload only edits and to spot deletions.
CREATE TABLE knowledge_mirror (
  id            TEXT PRIMARY KEY,
  file          TEXT NOT NULL,      -- relative to enroll.dir
  size          INTEGER NOT NULL,
  mtime_ms      INTEGER NOT NULL,
  content_sha256 TEXT NOT NULL,
  uploaded      INTEGER NOT NULL DEFAULT 0, -- 1 once some version reached the service
  updated_at    INTEGER NOT NULL
);
CREATE TABLE enroll_state (
  key   TEXT PRIMARY KEY,           -- knowledge_notify: a counter, > 0 while a notify is owed
  value INTEGER NOT NULL
);
`;

// Local registry (src/enroll, src/audio): the API has no list calls for these.
const REGISTRY_V1 = `
CREATE TABLE voiceprints (
  id            INTEGER PRIMARY KEY,
  voiceprint_id TEXT UNIQUE,        -- NULL when the service answered without one (spec-notes.md)
  name          TEXT NOT NULL,
  info_json     TEXT NOT NULL,      -- voiceprint_info as the service returned it
  source        TEXT NOT NULL,      -- enroll | folder | cli
  model         TEXT,               -- the fields sent with the audio
  sample_rate   INTEGER,
  channels      INTEGER,
  seconds       REAL,
  quality_json  TEXT,               -- levels measured before upload (src/voiceprint/quality.ts)
  audit_wav     TEXT,               -- the WAV sent, kept under state_dir/voiceprints/ for audit
  audit_json    TEXT,               -- its result file beside it
  created_at    INTEGER NOT NULL
);
CREATE INDEX voiceprints_name ON voiceprints(name);
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

// Face sync (src/faces), after release 1: downloads of a sync that failed half-way are kept for
// the next one, and image re-checks get spread due times instead of all falling due together.
const FACES_V2 = `
CREATE TABLE face_staging (
  face_id       TEXT PRIMARY KEY,   -- at most one kept download per face
  file          TEXT NOT NULL,      -- file name under state_dir/faces/.staging/
  ext           TEXT NOT NULL,      -- extension it gets in faces/ (sniffed type)
  sha256        TEXT NOT NULL,      -- checked again before a restarted agent uses the file
  bytes         INTEGER NOT NULL,
  etag          TEXT,
  last_modified TEXT,
  fetched_at    INTEGER NOT NULL    -- ms epoch of the download; dropped after a day
);
ALTER TABLE faces ADD COLUMN image_recheck_at INTEGER; -- ms epoch the image is due for a re-check; NULL: spread by face_id
`;

// Outbox, after release 1: fewer and smaller indexes. Each step of a file rewrote an entry in the
// three indexes naming `state`, and every finished row of months stayed in all six, so a burst
// wrote about 22 WAL pages per file. Now the dispatcher's indexes hold only unfinished rows (a
// row leaves them when its result files are written), the content hash is found through
// outbox_name (kind and name are always given with it), outbox_source replaces outbox_pending, and
// failed rows, which status lists, have their own small index.
const OUTBOX_V3 = `
DROP INDEX outbox_state;
DROP INDEX outbox_queue;
DROP INDEX outbox_hash;
DROP INDEX outbox_source;
DROP INDEX outbox_pending;
CREATE INDEX outbox_queue ON outbox(state, id) WHERE finalized = 0;
CREATE INDEX outbox_due ON outbox(state, next_attempt_at) WHERE finalized = 0;
CREATE INDEX outbox_source ON outbox(source_path) WHERE finalized = 0;
CREATE INDEX outbox_failed ON outbox(updated_at) WHERE state = 'failed';
`;

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial schema', sql: FACES_V1 + OUTBOX_V1 + REGISTRY_V1 + TTS_CACHE_V1 },
  { version: 2, name: 'face sync: kept downloads, spread image re-checks', sql: FACES_V2 },
  { version: 3, name: 'outbox: partial indexes over unfinished rows', sql: OUTBOX_V3 },
];
