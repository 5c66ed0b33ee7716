import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import type { AgentConfig } from '../config/schema.js';
import type { ServiceClient } from '../client/types.js';
import { describeError } from '../errors.js';
import { FACE_SYNC_ANSWER_MARGIN_MS, faceSyncDeadlineMs } from '../faces/sync-deadline.js';
import type { SyncReport } from '../faces/types.js';
import type { CliContext } from './command.js';
import { writeWarning } from './output.js';

// `faces add` or `faces update` changed the group on the service: this terminal's own cache takes
// the change at once instead of at the next sync or the face's turn in the re-checks
// (faces/recheck.ts). The running daemon is asked to fetch that face (POST /faces/sync with its
// face_id); with no daemon, the cache in state_dir (if there is one) is brought up to date by this
// process, that face only. The change itself has
// succeeded whatever happens here: a failure is a warning, and the re-checks catch up later.

export async function refreshOwnCache(ctx: CliContext, json: boolean, session: { config: AgentConfig; client: ServiceClient }, faceId: string): Promise<void> {
  let report: SyncReport | undefined;
  try {
    const { tryConnectControl } = await import('../control/control-client.js');
    const control = await tryConnectControl(session.config.control.socket, { timeoutMs: faceSyncDeadlineMs(session.config.service) + FACE_SYNC_ANSWER_MARGIN_MS });
    if (control) report = (await control.syncFaces({ face_id: faceId })) as SyncReport;
    else if (existsSync(join(session.config.state_dir, 'agent.db'))) report = await refreshHere(ctx, session, faceId);
  } catch (err) {
    return warn(ctx, json, faceId, describeError(err));
  }
  if (report && (!report.ok || report.failed > 0)) warn(ctx, json, faceId, report.error?.message ?? report.failures?.[0]?.message ?? 'the face could not be cached');
}

/** No daemon: one pass in this process that fetches this face and sends no re-check. */
async function refreshHere(ctx: CliContext, session: { config: AgentConfig; client: ServiceClient }, faceId: string): Promise<SyncReport> {
  const [{ configSecrets }, { createLogger }, { openDatabase }, { createFaceSync }] = await Promise.all([
    import('../config/load-config.js'),
    import('../log/logger.js'),
    import('../db/database.js'),
    import('../faces/face-sync.js'),
  ]);
  const { config, client } = session;
  // Errors only: a face that could not be cached is the one warning below.
  const logger = createLogger({ level: 'error', destination: ctx.io.stderr as unknown as DestinationStream, secrets: () => configSecrets(config) });
  const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
  const sync = createFaceSync({ config, db, client, logger: logger.child({ component: 'faces' }), deleteGraceMs: 0, maxRechecksPerPass: 0 });
  try {
    return await sync.refreshFace(faceId);
  } finally {
    await sync.stop();
    db.close();
  }
}

function warn(ctx: CliContext, json: boolean, faceId: string, why: string): void {
  writeWarning(ctx, json, {
    text: `face ${faceId} is changed on the service, but not yet in this terminal's face cache: ${why}; the cache takes it at the next sync or the face's next re-check, or run 'terminal-agent faces sync'`,
    code: 'TA_WARN_CACHE_NOT_UPDATED',
    details: { face_id: faceId },
  });
}
