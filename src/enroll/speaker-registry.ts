import type { Db } from '../db/database.js';

// The trained speakers this agent asked for (the API has no list call): `speaker list` reads it.

export interface SpeakerRow {
  speaker_id: string;
  model: string;
  label: string | null;
  status: number;
  created_at: number;
  updated_at: number;
}

export type SpeakerRegistry = ReturnType<typeof createSpeakerRegistry>;

export function createSpeakerRegistry(db: Db) {
  const s = {
    upsert: db.prepare(`INSERT INTO speakers (speaker_id, model, label, status, created_at, updated_at) VALUES (@speaker_id, @model, @label, @status, @now, @now)
      ON CONFLICT(model, speaker_id) DO UPDATE SET label = COALESCE(excluded.label, label), status = excluded.status, updated_at = excluded.updated_at`),
    all: db.prepare('SELECT * FROM speakers ORDER BY created_at, speaker_id'),
  };
  return {
    /** Call inside the caller's transaction. */
    put(r: { speaker_id: string; model: string; label: string | null; status: number }): void {
      s.upsert.run({ ...r, now: Date.now() });
    },
    list: () => s.all.all() as SpeakerRow[],
  };
}

/** How `speaker list` shows a status code (service-api.md section 3). */
export function speakerStatusText(status: number): string {
  if (status === 1) return 'ready';
  if (status === 0) return 'training';
  if (status === -1) return 'failed';
  return `status ${status}`;
}
