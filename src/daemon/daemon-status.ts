import type { AgentStatus, SayBody, VoiceprintEnrollBody } from '../control/types.js';
import type { RecheckStatus } from '../faces/recheck-status.js';
import type { ControlHandlers } from '../control/control-server.js';
import { AbortedError, DaemonError, UsageError, missingProgramFile } from '../errors.js';
import { formatDuration } from '../util/units.js';
import type { DaemonEnv, DaemonState } from './daemon.js';
import { iso, pendingPerKind } from './state-queries.js';
import { serveEventStream } from '../events/sse.js';
import { createDiskFloor, type DiskFloor } from '../disk/disk-floor.js';
import type { AgentConfig } from '../config/schema.js';

// What the daemon tells about itself: GET /status, the STATUS= line systemd shows, and the other
// control endpoints, which forward to the component of the current generation.

export function buildStatus(state: DaemonState, d: Pick<DaemonEnv, 'pid' | 'version'>): AgentStatus {
  const q = state.queries;
  const comps = state.agent.status();
  return {
    version: d.version,
    pid: d.pid,
    state: state.phase,
    started_at: iso(state.startedAt)!,
    uptime_s: Math.round((performance.now() - state.startedMono) / 1000),
    config_file: state.config.file ?? null,
    state_dir: state.config.state_dir,
    faces: { cached: q.cachedFaces(), last_sync: q.lastSync(), last_ok_sync_at: iso(q.lastOkSyncAt()), rechecks: rechecksOf(comps.faces) },
    outbox: q.outbox(),
    recent_failures: q.recentFailures(10),
    audio: {
      output_device: state.config.audio.output_device,
      input_device: state.config.audio.input_device,
      speech: comps.speech ?? null,
      voice: comps.voice ?? null,
    },
    components: comps,
    reload: { count: state.reload.count, last_at: iso(state.reload.lastAt), last_error: state.reload.lastError },
    watchdog: state.watchdog.status(),
    disk: diskOf(state.config).readSync() ?? null,
  };
}

/** The face sync's re-check progress, from its component status (absent when faces are not running). */
function rechecksOf(faces: unknown): RecheckStatus | null {
  const r = (faces as { rechecks?: RecheckStatus } | null | undefined)?.rechecks;
  return r && typeof r === 'object' ? r : null;
}

/** The free-space floor of this configuration's state_dir. */
export function diskOf(config: Pick<AgentConfig, 'state_dir' | 'state_min_free'>): DiskFloor {
  return createDiskFloor(config.state_dir, config.state_min_free);
}

/** One short line for `systemctl status`: last sync and outbox depth. */
export function statusLine(state: DaemonState): string {
  const q = state.queries;
  const last = q.lastSync();
  const lastOk = q.lastOkSyncAt();
  const sync = !last
    ? 'no face sync yet'
    : last.ok
      ? `last sync ${ago(lastOk)} ok (${q.cachedFaces() ?? 0} faces)`
      : `last sync failed ${ago(Date.parse(last.finished_at ?? last.started_at))}: ${last.error_code ?? 'error'}${lastOk ? `, last ok ${ago(lastOk)}` : ''}`;
  const pending = pendingPerKind(q.outbox());
  const depth = Object.values(pending).reduce((a, n) => a + n, 0);
  const parts = Object.entries(pending).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`);
  const full = diskOf(state.config).readSync()?.nearly_full ? 'DISK NEARLY FULL; ' : '';
  return `${full}${state.phase === 'running' ? '' : `${state.phase}; `}${sync}; outbox ${depth}${parts.length ? ` (${parts.join(', ')})` : ''}`;
}

function ago(ms: number | null): string {
  if (ms === null || Number.isNaN(ms)) return 'never';
  return `${formatDuration(Math.max(0, Date.now() - ms))} ago`;
}

export function controlHandlers(state: DaemonState, d: Pick<DaemonEnv, 'pid' | 'version'>): ControlHandlers {
  const accepting = () => {
    if (state.phase === 'stopping') throw new AbortedError('the daemon is stopping and takes no new work; retry once it has restarted');
  };
  // A part of the program found gone stops the daemon (daemon.ts); the caller is told so.
  const watched = <T>(where: string, work: () => Promise<T>): Promise<T> => work().catch((err: unknown) => {
    if (!state.programReplaced(err, where)) throw err;
    throw new DaemonError(`the daemon's program files were replaced while it ran (${missingProgramFile(err)} is missing): it stops, and systemd starts it again from the installed files; retry in a few seconds`, { cause: err });
  });
  return {
    status: () => buildStatus(state, d),
    faces: () => state.agent.listFaces(),
    syncFaces: (body) => watched('POST /faces/sync', async () => {
      accepting();
      const faceId = body?.face_id;
      if (faceId === undefined) return state.agent.syncFaces();
      // `faces update` changed this face on the service: fetched at once, not at its re-check's turn.
      if (typeof faceId !== 'string') throw new UsageError('"face_id" must be a string of 32 hex characters');
      return state.agent.refreshFace(faceId);
    }),
    say: (body, signal) => watched('POST /say', async () => {
      accepting();
      if (typeof body.text !== 'string' || body.text.trim() === '') throw new UsageError('POST /say needs a JSON body with a non-empty "text"');
      return state.agent.say(body as SayBody, signal);
    }),
    enrollVoiceprint: (body, signal) => watched('POST /voiceprint/enroll', async () => {
      accepting();
      if (typeof body.name !== 'string' || body.name.trim() === '') throw new UsageError('POST /voiceprint/enroll needs a JSON body with a non-empty "name"');
      if (body.seconds !== undefined && (typeof body.seconds !== 'number' || !(body.seconds > 0))) throw new UsageError('"seconds" must be a positive number');
      return state.agent.enrollVoiceprint(body as VoiceprintEnrollBody, signal);
    }),
    metrics: () => watched('GET /metrics', () => state.metrics.scrape([state.agent.metrics])),
    events: (req, res, signal) => serveEventStream(req, res, state.events, { signal, onSlowClient: () => state.metrics.eventClientsDropped.inc() }),
  };
}
