import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, inTransaction, type Db } from '../db/database.js';
import type { Migration } from '../db/migrations.js';
import { InvalidInputError } from '../errors.js';
import { sniffImage } from './sniff.js';
import type { EmulatorFace, EmulatorState, SeedFace } from './types.js';
import { makeDirSync } from '../util/make-dir.js';

// The emulator's state: SQLite (emulator.db under --data, else in memory) holding the records and
// the face images (one row per distinct image: seeding 10,000 faces is one transaction, not 10,000
// files), plus uploaded audio as content-addressed files under <data>/blobs. With --data,
// everything survives a restart.

const EMULATOR_MIGRATIONS: readonly Migration[] = [{
  version: 1,
  name: 'emulator schema',
  sql: `
CREATE TABLE faces (
  id INTEGER PRIMARY KEY AUTOINCREMENT,   -- AUTOINCREMENT: ids only grow, even after deletes
  face_id TEXT NOT NULL UNIQUE,
  group_id TEXT NOT NULL,
  name TEXT NOT NULL,
  image_sha TEXT NOT NULL,
  image_mime TEXT NOT NULL,
  image_size INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX faces_group ON faces(group_id, id);
CREATE INDEX faces_image ON faces(image_sha);
CREATE TABLE images (sha TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE knowledge (id TEXT PRIMARY KEY, title TEXT, content TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE notifications (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE speakers (
  model TEXT NOT NULL, speaker_id TEXT NOT NULL, audio_text TEXT NOT NULL, audio_sha TEXT NOT NULL,
  created_at INTEGER NOT NULL, PRIMARY KEY (model, speaker_id)
);
CREATE TABLE voiceprints (voiceprint_id TEXT PRIMARY KEY, name TEXT NOT NULL, info TEXT NOT NULL, audio_sha TEXT NOT NULL, created_at INTEGER NOT NULL);
`,
}];

export interface FaceRow extends EmulatorFace {
  image_sha: string;
  image_mime: string;
  image_size: number;
  updated_at: number;
}

export interface FaceImage {
  sha: string;
  mime: string;
  data: Buffer;
}

export type Store = ReturnType<typeof createStore>;

export function createStore(opts: { dataDir?: string; trainMs: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const root = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'ta-emulator-'));
  const blobDir = join(root, 'blobs');
  const tmpDir = join(root, 'tmp');
  makeDirSync(blobDir);
  makeDirSync(tmpDir);
  const db: Db = openDatabase({ path: opts.dataDir ? join(root, 'emulator.db') : ':memory:', migrations: EMULATOR_MIGRATIONS });

  const q = {
    facesOfGroup: db.prepare('SELECT * FROM faces WHERE group_id = ? ORDER BY id'),
    allFaces: db.prepare('SELECT * FROM faces ORDER BY id'),
    face: db.prepare('SELECT * FROM faces WHERE face_id = ?'),
    insertFace: db.prepare('INSERT INTO faces (face_id, group_id, name, image_sha, image_mime, image_size, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    renameFace: db.prepare('UPDATE faces SET name = ?, updated_at = ? WHERE face_id = ?'),
    reimageFace: db.prepare('UPDATE faces SET name = ?, image_sha = ?, image_mime = ?, image_size = ?, updated_at = ? WHERE face_id = ?'),
    deleteFace: db.prepare('DELETE FROM faces WHERE face_id = ?'),
    // AUTOINCREMENT hands out seq + 1 next: a new id above both, and seq moved to it, never clashes.
    nextId: db.prepare("SELECT max(coalesce((SELECT max(id) FROM faces), 0), coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'faces'), 0)) + 1").pluck(),
    setId: db.prepare('UPDATE faces SET id = ? WHERE face_id = ?'),
    setSeq: db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'faces'"),
    audioUsers: db.prepare('SELECT (SELECT COUNT(*) FROM speakers WHERE audio_sha = @sha) + (SELECT COUNT(*) FROM voiceprints WHERE audio_sha = @sha) AS n'),
    putImage: db.prepare('INSERT OR IGNORE INTO images (sha, data) VALUES (?, ?)'),
    image: db.prepare('SELECT data FROM images WHERE sha = ?').pluck(),
    dropImageIfUnused: db.prepare('DELETE FROM images WHERE sha = @sha AND NOT EXISTS (SELECT 1 FROM faces WHERE image_sha = @sha)'),
    upsertKnowledge: db.prepare(`INSERT INTO knowledge (id, title, content, updated_at) VALUES (?, ?, ?, ?)
      ON CONFLICT(id) DO UPDATE SET title = excluded.title, content = excluded.content, updated_at = excluded.updated_at`),
    deleteKnowledge: db.prepare('DELETE FROM knowledge WHERE id = ?'),
    allKnowledge: db.prepare('SELECT id, title, content FROM knowledge ORDER BY updated_at, id'),
    insertNotification: db.prepare('INSERT INTO notifications (kind, body, at) VALUES (?, ?, ?)'),
    allNotifications: db.prepare('SELECT kind, body, at FROM notifications ORDER BY seq'),
    insertSpeaker: db.prepare('INSERT INTO speakers (model, speaker_id, audio_text, audio_sha, created_at) VALUES (?, ?, ?, ?, ?)'),
    speaker: db.prepare('SELECT * FROM speakers WHERE model = ? AND speaker_id = ?'),
    speakerById: db.prepare('SELECT * FROM speakers WHERE speaker_id = ?'),
    deleteSpeaker: db.prepare('DELETE FROM speakers WHERE model = ? AND speaker_id = ?'),
    allSpeakers: db.prepare('SELECT * FROM speakers ORDER BY created_at'),
    insertVoiceprint: db.prepare('INSERT INTO voiceprints (voiceprint_id, name, info, audio_sha, created_at) VALUES (?, ?, ?, ?, ?)'),
    voiceprint: db.prepare('SELECT * FROM voiceprints WHERE voiceprint_id = ?'),
    deleteVoiceprint: db.prepare('DELETE FROM voiceprints WHERE voiceprint_id = ?'),
    allVoiceprints: db.prepare('SELECT * FROM voiceprints ORDER BY created_at'),
  };

  type SpeakerRow = { model: string; speaker_id: string; audio_text: string; audio_sha: string; created_at: number };
  const speakerStatus = (row: SpeakerRow | undefined): number => (!row ? -1 : now() - row.created_at >= opts.trainMs ? 1 : 0);
  const publicFace = (r: FaceRow): EmulatorFace => ({ face_id: r.face_id, group_id: r.group_id, id: r.id, name: r.name });
  const blobPath = (sha: string) => join(blobDir, sha);

  function dropAudioIfUnused(sha: string): void {
    const { n } = q.audioUsers.get({ sha }) as { n: number };
    if (n === 0) rmSync(blobPath(sha), { force: true });
  }

  /** Moves an uploaded audio temp file into the blob folder (content addressed: one copy per content). */
  function adoptAudio(tmpPath: string, sha: string): void {
    if (existsSync(blobPath(sha))) unlinkSync(tmpPath);
    else renameSync(tmpPath, blobPath(sha));
  }

  const insertFace = (groupId: string, name: string, image: FaceImage): FaceRow => {
    const faceId = randomBytes(16).toString('hex');
    const at = now();
    q.putImage.run(image.sha, image.data);
    const { lastInsertRowid } = q.insertFace.run(faceId, groupId, name, image.sha, image.mime, image.data.length, at);
    return { face_id: faceId, group_id: groupId, id: Number(lastInsertRowid), name, image_sha: image.sha, image_mime: image.mime, image_size: image.data.length, updated_at: at };
  };

  const state: EmulatorState = {
    faces: (groupId) => ((groupId === undefined ? q.allFaces.all() : q.facesOfGroup.all(groupId)) as FaceRow[]).map(publicFace),
    face(faceId) {
      const r = q.face.get(faceId) as FaceRow | undefined;
      return r && { ...publicFace(r), mime: r.image_mime, etag: `"${r.image_sha}"`, size: r.image_size };
    },
    faceImage(faceId) {
      const r = q.face.get(faceId) as FaceRow | undefined;
      return r && (q.image.get(r.image_sha) as Buffer);
    },
    knowledge: () => q.allKnowledge.all() as { id: string; title: string | null; content: string }[],
    notifications: () => (q.allNotifications.all() as { kind: 'agent' | 'knowledge'; body: string; at: number }[]).map((n) => ({ ...n, body: JSON.parse(n.body) as unknown })),
    speakers: () => (q.allSpeakers.all() as SpeakerRow[]).map((r) => ({ speaker_id: r.speaker_id, model: r.model, audio_text: r.audio_text, status: speakerStatus(r) })),
    voiceprints: () => (q.allVoiceprints.all() as { voiceprint_id: string; name: string; info: string }[])
      .map((r) => ({ voiceprint_id: r.voiceprint_id, name: r.name, info: JSON.parse(r.info) as Record<string, unknown> })),
  };

  return {
    tmpDir,
    state,
    blobPath,
    adoptAudio,
    listFaces: (groupId: string) => (q.facesOfGroup.all(groupId) as FaceRow[]).map(publicFace),
    getFace: (faceId: string) => q.face.get(faceId) as FaceRow | undefined,
    imageData: (sha: string) => q.image.get(sha) as Buffer | undefined,
    createFace: (groupId: string, name: string, image: FaceImage): FaceRow => inTransaction(db, () => insertFace(groupId, name, image)),
    updateFace(faceId: string, name: string, image?: FaceImage): void {
      inTransaction(db, () => {
        const before = q.face.get(faceId) as FaceRow;
        if (image) {
          q.putImage.run(image.sha, image.data);
          q.reimageFace.run(name, image.sha, image.mime, image.data.length, now(), faceId);
          if (image.sha !== before.image_sha) q.dropImageIfUnused.run({ sha: before.image_sha });
        } else q.renameFace.run(name, now(), faceId);
      });
    },
    /** An administrator's image change (set_image): undefined when the face does not exist. */
    setImage(faceId: string, data: Buffer, changeId: boolean): EmulatorFace | undefined {
      const kind = sniffImage(data.subarray(0, 64));
      if (!kind) throw new InvalidInputError('set_image: the image is not a JPEG, PNG, BMP or WebP');
      const sha = createHash('sha256').update(data).digest('hex');
      return inTransaction(db, () => {
        const before = q.face.get(faceId) as FaceRow | undefined;
        if (!before) return undefined;
        q.putImage.run(sha, data);
        q.reimageFace.run(before.name, sha, kind.mime, data.length, now(), faceId);
        if (sha !== before.image_sha) q.dropImageIfUnused.run({ sha: before.image_sha });
        if (changeId) {
          const id = q.nextId.get() as number;
          q.setId.run(id, faceId);
          q.setSeq.run(id);
        }
        return publicFace(q.face.get(faceId) as FaceRow);
      });
    },
    deleteFace(faceId: string): void {
      inTransaction(db, () => {
        const before = q.face.get(faceId) as FaceRow | undefined;
        q.deleteFace.run(faceId);
        if (before) q.dropImageIfUnused.run({ sha: before.image_sha });
      });
    },
    seedFaces(groupId: string, faces: readonly SeedFace[]): EmulatorFace[] {
      const prepared = faces.map((f, i) => {
        const kind = sniffImage(f.image.subarray(0, 64));
        if (!kind) throw new InvalidInputError(`seedFaces: image ${i} (${f.name}) is not a JPEG, PNG, BMP or WebP`);
        return { name: f.name, image: { sha: createHash('sha256').update(f.image).digest('hex'), mime: kind.mime, data: f.image } };
      });
      return inTransaction(db, () => prepared.map((p) => publicFace(insertFace(groupId, p.name, p.image))));
    },
    putKnowledge(id: string, title: string | null, content: string): void {
      q.upsertKnowledge.run(id, title, content, now());
    },
    deleteKnowledge: (id: string): boolean => q.deleteKnowledge.run(id).changes > 0,
    addNotification(kind: 'agent' | 'knowledge', body: unknown): void {
      q.insertNotification.run(kind, JSON.stringify(body), now());
    },
    createSpeaker(model: string, audioText: string, audioSha: string): string {
      const speakerId = `spk_${randomBytes(8).toString('hex')}`;
      q.insertSpeaker.run(model, speakerId, audioText, audioSha, now());
      return speakerId;
    },
    speakerStatus: (model: string, speakerId: string): number => speakerStatus(q.speaker.get(model, speakerId) as SpeakerRow | undefined),
    /** A trained speaker usable as a TTS voice (status 1, any model). */
    trainedVoice: (speakerId: string): boolean => speakerStatus(q.speakerById.get(speakerId) as SpeakerRow | undefined) === 1,
    deleteSpeaker(model: string, speakerId: string): boolean {
      const row = q.speaker.get(model, speakerId) as SpeakerRow | undefined;
      if (!row) return false;
      q.deleteSpeaker.run(model, speakerId);
      dropAudioIfUnused(row.audio_sha);
      return true;
    },
    createVoiceprint(name: string, info: Record<string, unknown>, audioSha: string): string {
      const voiceprintId = `vp_${randomBytes(12).toString('hex')}`;
      q.insertVoiceprint.run(voiceprintId, name, JSON.stringify({ voiceprint_id: voiceprintId, ...info }), audioSha, now());
      return voiceprintId;
    },
    voiceprintInfo(voiceprintId: string): Record<string, unknown> | undefined {
      const r = q.voiceprint.get(voiceprintId) as { info: string } | undefined;
      return r && (JSON.parse(r.info) as Record<string, unknown>);
    },
    deleteVoiceprint(voiceprintId: string): boolean {
      const r = q.voiceprint.get(voiceprintId) as { audio_sha: string } | undefined;
      if (!r) return false;
      q.deleteVoiceprint.run(voiceprintId);
      dropAudioIfUnused(r.audio_sha);
      return true;
    },
    close(): void {
      if (db.open) db.close();
      if (!opts.dataDir) rmSync(root, { recursive: true, force: true });
      else rmSync(tmpDir, { recursive: true, force: true });
    },
  };
}
