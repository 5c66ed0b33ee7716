import { join } from 'node:path';
import type { CliContext, ParsedArgs } from './command.js';
import { writeJson, writeTable, type Column } from './output.js';
import { loadLocalConfig } from './local-config.js';
import { readCachedFaces, type CachedFaceView } from '../faces/read-cache.js';

// `faces list --cached` (wired in src/cli/faces-commands.ts), apart from faces-cli.ts: it reads
// agent.db and prints, and must start about as fast as a bare node, so it loads none of what
// `faces sync` needs (the service client's helpers, the event stream, the progress line).

const CACHED_COLUMNS: Column<CachedFaceView>[] = [
  { header: 'face_id', value: (f) => f.face_id },
  { header: 'name', value: (f) => f.name },
  { header: 'id', value: (f) => f.id },
  { header: 'group_id', value: (f) => f.group_id },
  { header: 'image', value: (f) => f.image },
];

/** `faces list --cached`: agent.db under the configured state_dir, read-only, no network. */
export async function listCachedCommand(args: ParsedArgs, ctx: CliContext): Promise<void> {
  // The whole config is read and checked, as by every other command: a misspelt key is refused
  // here too, not silently taken.
  const stateDir = (await loadLocalConfig(args, ctx)).state_dir;
  const faces = readCachedFaces(stateDir);
  if (args.global.json) return writeJson(ctx, faces);
  writeTable(ctx, faces, CACHED_COLUMNS, `(no faces cached in ${join(stateDir, 'faces')})`);
}
