import { escapeControls } from '../util/terminal-text.js';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import type { CliContext, ParsedArgs } from './command.js';
import { writeJson, writeLine } from './output.js';
import { clientFromConfig } from './api-client.js';
import { AgentError, AuthError, ExitCode, ServiceError } from '../errors.js';
import { formatDuration } from '../util/units.js';
import { FACE_SYNC_ANSWER_MARGIN_MS, faceSyncDeadlineMs } from '../faces/sync-deadline.js';
import type { SyncReport } from '../faces/types.js';
import { openLiveArea } from './live-area.js';
import { syncProgressLine, type SyncProgressView } from './progress-format.js';
import { createEventBus, type AgentEvent } from '../events/event-bus.js';

// `faces sync` (wired in faces-commands.ts): through the running daemon, or one sync of its own.

/**
 * `faces sync`: asks the running daemon over the control socket; with no daemon, runs one sync
 * in this process against state_dir (the daemon's instance lock is not taken: it is not running).
 */
export async function syncCommand(args: ParsedArgs, ctx: CliContext): Promise<number> {
  const session = await clientFromConfig(args, ctx, { requireSecrets: false });
  let report: SyncReport;
  let via: 'daemon' | 'local';
  const progress = await syncProgress(ctx, args.global.json);
  // The control client and the event stream (node:http) only for this command: `faces list --cached` stays light.
  const [{ tryConnectControl }, { openEventStream }] = await Promise.all([import('../control/control-client.js'), import('../events/sse-client.js')]);
  try {
    // The daemon cuts a pass at faceSyncDeadlineMs: wait that long and a little, not a fixed 10 min.
    const control = await tryConnectControl(session.config.control.socket, { timeoutMs: faceSyncDeadlineMs(session.config.service) + FACE_SYNC_ANSWER_MARGIN_MS });
    if (control) {
      via = 'daemon';
      const stream = progress.live ? openEventStream({ socketPath: session.config.control.socket, types: ['faces.sync.progress'], onEvent: progress.onEvent }) : undefined;
      // A daemon from before GET /events answers 404: the sync runs all the same, without progress.
      await stream?.ready.catch(() => undefined);
      try {
        report = (await control.syncFaces()) as SyncReport;
      } finally {
        stream?.close();
      }
    } else {
      via = 'local';
      report = await syncOnce(session, ctx, progress.live ? progress.onEvent : undefined);
    }
  } finally {
    progress.clear();
    await session.client.close();
  }
  if (args.global.json) writeJson(ctx, { ...report, via });
  else if (report.ok) {
    writeLine(ctx, `face sync done (${via === 'daemon' ? 'by the running daemon' : 'in this process, no daemon running'}) in ${formatDuration(report.duration_ms)}: `
      + `${report.added} added, ${report.updated} updated, ${report.removed} removed, ${report.failed} failed, `
      + `${report.image_requests} image requests; ${report.faces_cached} faces cached`);
    for (const f of report.failures ?? []) writeLine(ctx, `  failed: ${escapeControls(f.name)} (${escapeControls(f.face_id)}): ${escapeControls(f.message)}`);
    if (report.skipped > 0) writeLine(ctx, `  ${report.skipped} malformed record(s) of the listing were skipped:`);
    for (const line of report.skipped_records ?? []) writeLine(ctx, `  skipped: ${escapeControls(line)}`);
  }
  if (!report.ok) throw errorOfReport(report);
  // A face left out (its image failed, or its record was malformed) is a partial sync: exit 1.
  return report.failed > 0 || report.skipped > 0 ? ExitCode.failure : ExitCode.ok;
}

/** The live line of `faces sync` on a terminal: images done / total, bytes and rate. */
async function syncProgress(ctx: CliContext, json: boolean) {
  const area = await openLiveArea(ctx, json);
  let downloadingSince: number | undefined;
  if (area.live) area.update('face sync: starting...');
  return {
    live: area.live,
    clear: () => area.clear(),
    onEvent(e: AgentEvent) {
      if (e.type !== 'faces.sync.progress') return;
      const p = e.data as unknown as SyncProgressView;
      if (p.phase !== 'listing') downloadingSince ??= performance.now();
      area.update(syncProgressLine(p, downloadingSince === undefined ? 0 : performance.now() - downloadingSince));
    },
  };
}

async function syncOnce(session: Awaited<ReturnType<typeof clientFromConfig>>, ctx: CliContext, onEvent?: (e: AgentEvent) => void): Promise<SyncReport> {
  const { config, client } = session;
  // The sync machinery (and the database) only for this path: `faces list --cached` stays light.
  const [{ configSecrets }, { createLogger }, { openDatabase }, { createFaceSync }] = await Promise.all([
    import('../config/load-config.js'),
    import('../log/logger.js'),
    import('../db/database.js'),
    import('../faces/face-sync.js'),
  ]);
  const logger = createLogger({ level: 'warn', destination: ctx.io.stderr as unknown as DestinationStream, secrets: () => configSecrets(config) });
  const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
  const events = onEvent ? createEventBus() : undefined;
  if (events && onEvent) events.subscribe(onEvent);
  const sync = createFaceSync({ config, db, client, logger: logger.child({ component: 'faces' }), deleteGraceMs: 0, ...(events ? { events } : {}) });
  const onAbort = () => void sync.stop();
  ctx.shutdown.addEventListener('abort', onAbort, { once: true });
  try {
    return await sync.syncNow('manual');
  } finally {
    ctx.shutdown.removeEventListener('abort', onAbort);
    await sync.stop();
    db.close();
  }
}

/** The failed sync as an error of the class whose exit code it carries (77 credentials, 69 service). */
export function errorOfReport(report: SyncReport): AgentError {
  const e = report.error ?? { code: 'TA_ERR_FAILURE', message: 'face sync failed', exit_code: 1 };
  const opts = { details: { code: e.code }, ...(e.status !== undefined ? { status: e.status } : {}) };
  if (e.exit_code === ExitCode.noPerm) return new AuthError(e.message, opts);
  if (e.exit_code === ExitCode.unavailable) return new ServiceError(e.message, opts);
  return new AgentError(e.message, opts);
}
