import { createHash } from 'node:crypto';
import { openSync, readSync, closeSync, statSync, rmSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Db } from '../db/database.js';
import { inTransaction } from '../db/database.js';
import type { Logger } from '../log/logger.js';
import { describeError } from '../errors.js';
import { parseWavHeader, type WavHeaderInfo } from './wav.js';
import { WavFileWriter } from './wav-file-writer.js';
import { makeDir } from '../util/make-dir.js';
import type { DiskFloor } from '../disk/disk-floor.js';

// Synthesized audio kept for offline replay: one WAV per (text, voice, ratios) under
// state_dir/tts/, indexed in the tts_cache table, evicted least-recently-used beyond tts.cache_size.
// Only audio whose stream was complete and valid is committed, by rename, so a crash or a cut stream
// never leaves a half file that would replay as a clipped phrase.

export interface TtsParams {
  text: string;
  voice: string;
  volume_ratio: number;
  speed_ratio: number;
  pitch_ratio: number;
}

export interface CacheEntry {
  key: string;
  path: string;
  bytes: number;
  header: WavHeaderInfo;
}

export interface TtsCacheDeps {
  db: Db;
  /** state_dir/tts */
  dir: string;
  /** tts.cache_size in bytes; 0 disables the cache. */
  maxBytes: number;
  logger: Logger;
  now?: () => number;
  /** The free-space floor of state_dir: the cache stops growing at it. */
  disk?: DiskFloor;
}

/**
 * A phrase is written while it plays, before its size is known: a new entry is started only with
 * this much room above the floor (about 2 minutes of 16 kHz mono), and committed only if the floor
 * still holds after it was written.
 */
const WRITE_HEADROOM_BYTES = 4 * 1024 * 1024;

export interface TtsCache {
  init(): Promise<void>;
  /** A usable entry (file present and its header valid), marked as used; undefined otherwise. */
  get(key: string): CacheEntry | undefined;
  /** A writer for a new entry, or undefined when the cache is disabled. */
  writer(key: string): WavFileWriter | undefined;
  /** Indexes a committed writer's file and evicts beyond the bound. */
  commit(key: string, writer: WavFileWriter, header: WavHeaderInfo, dataBytes: number): Promise<void>;
  remove(key: string): void;
  stats(): { entries: number; bytes: number; max_bytes: number };
}

export function ttsCacheKey(p: TtsParams): string {
  return createHash('sha256').update(JSON.stringify(['tts/1', p.text, p.voice, p.volume_ratio, p.speed_ratio, p.pitch_ratio])).digest('hex');
}

interface Row {
  key: string;
  file: string;
  bytes: number;
}

export function createTtsCache(deps: TtsCacheDeps): TtsCache {
  const { db, dir, maxBytes, logger } = deps;
  const now = deps.now ?? Date.now;
  const selectOne = db.prepare<[string], Row>('SELECT key, file, bytes FROM tts_cache WHERE key = ?');
  const touch = db.prepare('UPDATE tts_cache SET last_used_at = ? WHERE key = ?');
  const upsert = db.prepare(
    `INSERT INTO tts_cache (key, file, bytes, created_at, last_used_at) VALUES (@key, @file, @bytes, @now, @now)
     ON CONFLICT(key) DO UPDATE SET file = excluded.file, bytes = excluded.bytes, created_at = excluded.created_at, last_used_at = excluded.last_used_at`,
  );
  const del = db.prepare('DELETE FROM tts_cache WHERE key = ?');
  const totals = db.prepare<[], { entries: number; bytes: number | null }>('SELECT COUNT(*) AS entries, SUM(bytes) AS bytes FROM tts_cache');
  const oldest = db.prepare<[], Row>('SELECT key, file, bytes FROM tts_cache ORDER BY last_used_at ASC, created_at ASC');
  const allFiles = db.prepare<[], { file: string }>('SELECT file FROM tts_cache');
  const newest = db.prepare<[], { t: number | null }>('SELECT MAX(last_used_at) AS t FROM tts_cache');

  // LRU order must be strict: two uses within one millisecond (a short phrase on a fast device)
  // would tie, and the tie-break by creation time could evict the phrase just used.
  let lastStamp = newest.get()?.t ?? 0;
  function stamp(): number {
    lastStamp = Math.max(now(), lastStamp + 1);
    return lastStamp;
  }

  function fileName(key: string): string {
    return `${key}.wav`;
  }

  async function init(): Promise<void> {
    if (maxBytes <= 0) return;
    await makeDir(dir);
    // Leftovers of a crash mid-stream, and files the index does not know (never committed).
    const known = new Set(allFiles.all().map((r) => r.file));
    for (const name of await readdir(dir)) {
      if (name.endsWith('.tmp') || (name.endsWith('.wav') && !known.has(name))) await rm(join(dir, name), { force: true });
    }
  }

  function remove(key: string): void {
    const row = selectOne.get(key);
    del.run(key);
    if (row) rmSync(join(dir, row.file), { force: true });
  }

  function get(key: string): CacheEntry | undefined {
    if (maxBytes <= 0) return undefined;
    const row = selectOne.get(key);
    if (!row) return undefined;
    const path = join(dir, row.file);
    try {
      const size = statSync(path).size;
      const header = readHeader(path);
      const needed = header.dataOffset + (header.dataBytes ?? 0);
      if (size !== row.bytes || size < needed) throw new Error(`size ${size}, index says ${row.bytes}, header needs ${needed}`);
      touch.run(stamp(), key);
      return { key, path, bytes: row.bytes, header };
    } catch (err) {
      // A file removed or damaged behind our back: forget it and synthesize again.
      logger.warn({ key, file: path, err: describeError(err) }, 'dropping an unusable TTS cache entry');
      remove(key);
      return undefined;
    }
  }

  function writer(key: string): WavFileWriter | undefined {
    if (maxBytes <= 0) return undefined;
    const room = deps.disk?.readSync();
    if (room && room.free_bytes < room.min_free_bytes + WRITE_HEADROOM_BYTES) {
      logger.debug({ free_bytes: room.free_bytes, min_free_bytes: room.min_free_bytes }, 'disk nearly full: this phrase is played but not cached');
      return undefined;
    }
    return new WavFileWriter(join(dir, fileName(key)), maxBytes);
  }

  async function commit(key: string, w: WavFileWriter, header: WavHeaderInfo, dataBytes: number): Promise<void> {
    await deps.disk?.assertRoom(0, 'the TTS cache');
    const bytes = await w.commit(header, dataBytes);
    const t = stamp();
    const evicted = inTransaction(db, () => {
      upsert.run({ key, file: fileName(key), bytes, now: t });
      const out: Row[] = [];
      let total = totals.get()?.bytes ?? 0;
      for (const row of oldest.all()) {
        if (total <= maxBytes) break;
        if (row.key === key) continue;
        del.run(row.key);
        total -= row.bytes;
        out.push(row);
      }
      return out;
    });
    for (const row of evicted) await rm(join(dir, row.file), { force: true });
    if (evicted.length > 0) logger.debug({ evicted: evicted.length }, 'TTS cache evicted least recently used entries');
  }

  function stats() {
    const t = totals.get();
    return { entries: t?.entries ?? 0, bytes: t?.bytes ?? 0, max_bytes: maxBytes };
  }

  return { init, get, writer, commit, remove, stats };
}

function readHeader(path: string): WavHeaderInfo {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return parseWavHeader(buf.subarray(0, n), 'input');
  } finally {
    closeSync(fd);
  }
}
