import type { CommandSpec } from './command.js';
import { writeJson, writeTable, type Column } from './output.js';
import { loadLocalConfig } from './api-client.js';
import { createSpeakerRegistry, speakerStatusText, type SpeakerRow } from '../enroll/speaker-registry.js';

// `speaker list`: the trained speakers this terminal asked for, from agent.db (the API has no list
// call). Read-only, so it runs beside the daemon and needs no network.

const COLUMNS: Column<SpeakerRow>[] = [
  { header: 'speaker_id', value: (r) => r.speaker_id },
  { header: 'model', value: (r) => r.model },
  { header: 'label', value: (r) => r.label },
  { header: 'status', value: (r) => speakerStatusText(r.status) },
  { header: 'updated', value: (r) => new Date(r.updated_at).toISOString() },
];

const list: CommandSpec = {
  path: ['speaker', 'list'],
  summary: "the speakers this terminal trained (the agent's local registry; the API has no list call)",
  positionals: { min: 0, max: 0 },
  run: async (args, ctx) => {
    const config = await loadLocalConfig(args, ctx);
    // SQLite is loaded by the commands that read it, not by every CLI call.
    const rows = (await import('../db/read-only.js')).readAgentDb(config.state_dir, (db) => createSpeakerRegistry(db).list());
    if (args.global.json) {
      writeJson(ctx, rows.map((r) => ({ ...r, status_text: speakerStatusText(r.status), created_at: new Date(r.created_at).toISOString(), updated_at: new Date(r.updated_at).toISOString() })));
      return;
    }
    writeTable(ctx, rows, COLUMNS, '(no speakers trained from this terminal)');
  },
};

export const speakerListCommands: CommandSpec[] = [list];
