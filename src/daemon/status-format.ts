import type { AgentStatus } from '../control/types.js';
import { formatDuration, formatSize } from '../util/units.js';
import type { RecheckStatus } from '../faces/recheck-status.js';
import { describeDisk } from '../disk/describe-disk.js';
import { ENROLL_DIR_RETRY_MS } from '../enroll/retry-interval.js';
import { escapeControls } from '../util/terminal-text.js';

// `terminal-agent status` for a human: a few labelled lines, the most urgent facts first.

export function formatStatus(s: AgentStatus): string {
  const lines: string[] = [];
  lines.push(`terminal-agent ${s.version}, pid ${s.pid}, ${s.state}, up ${formatDuration(s.uptime_s * 1000)} (since ${s.started_at})`);
  lines.push(`config:      ${s.config_file ?? '-'}   state: ${s.state_dir}`);
  const last = s.faces.last_sync;
  const faces = !last
    ? 'no sync yet'
    : last.ok
      ? `last sync ${last.finished_at ?? last.started_at} ok (+${last.added} ~${last.updated} -${last.removed}${last.failed ? `, ${last.failed} image(s) failed` : ''})`
      : `last sync ${last.finished_at ?? last.started_at} FAILED: ${escapeControls(last.error ?? '?')}${last.error_code ? ` [${last.error_code}]` : ''}; last ok ${s.faces.last_ok_sync_at ?? 'never'}`;
  if (s.disk) lines.push(`disk:        ${describeDisk(s.disk)}`);
  lines.push(`faces:       ${s.faces.cached ?? 0} cached; ${faces}${skippedNote(s.components.faces)}`);
  if (s.faces.rechecks) lines.push(`rechecks:    ${describeRechecks(s.faces.rechecks)}`);
  const kinds = Object.entries(s.outbox);
  if (kinds.length === 0) lines.push('outbox:      empty');
  else {
    lines.push('outbox:');
    for (const [kind, states] of kinds.sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`  ${kind.padEnd(12)} ${Object.entries(states).map(([st, n]) => `${st} ${n}`).join(', ')}`);
    }
  }
  const enroll = s.components.enroll as { degraded?: unknown } | undefined;
  if (typeof enroll?.degraded === 'string') lines.push(`ENROLLMENT:  not running, retried every ${ENROLL_DIR_RETRY_MS / 1000} s: ${enroll.degraded}`);
  lines.push(`audio:       output ${s.audio.output_device} (${brief(s.audio.speech)}), input ${s.audio.input_device} (${brief(s.audio.voice)})`);
  const missing = Object.entries(s.components).filter(([, v]) => v === 'missing').map(([k]) => k);
  if (missing.length) lines.push(`components:  not in this build: ${missing.join(', ')}`);
  if (s.watchdog.enabled) lines.push(`watchdog:    every ${formatDuration(s.watchdog.interval_ms ?? 0)}, last fed ${s.watchdog.last_fed_at ?? 'never'}`);
  if (s.watchdog.failing.length) lines.push(`STUCK:       ${s.watchdog.failing.join('; ')}`);
  if (s.reload.last_error) lines.push(`reload:      last reload refused: ${s.reload.last_error}`);
  if (s.recent_failures.length === 0) lines.push('failures:    none recent');
  else {
    lines.push('recent failures:');
    for (const f of s.recent_failures) {
      // Names and messages come from file names and the service: one line each, escapes shown.
      lines.push(`  ${f.at}  ${f.source}${f.kind ? `/${f.kind}` : ''}${f.name ? ` ${escapeControls(f.name)}` : ''}: ${escapeControls(f.error)}${f.code ? ` [${f.code}]` : ''}`);
    }
  }
  return lines.join('\n');
}

/** How far image re-checks have come round the group, and how fresh the budget keeps the cache. */
export function describeRechecks(r: RecheckStatus): string {
  if (r.oldest_check_age_s === null) return 'no cached image to re-check';
  const how = r.mode === 'conditional'
    ? 'the service answers 304'
    : r.mode === 'full'
      ? `the service answers no conditional request: every re-check is a download, ${formatSize(r.budget.bytes_per_hour)}/h budget`
      : 'no re-check answered yet';
  const round = r.round_s === null ? '' : `; a replaced image is in the cache within about ${formatDuration(r.round_s * 1000)} (one round of the group)`;
  const waiting = r.deferred > 0 ? `, ${r.deferred} waiting for the budget` : '';
  return `oldest check ${formatDuration(r.oldest_check_age_s * 1000)} ago${waiting}; ${how}${round}; last hour ${r.last_hour.requests} requests, ${formatSize(r.last_hour.bytes)}`;
}

/** The face sync's last listing had malformed records: how many, and why. */
function skippedNote(faces: unknown): string {
  const last = (faces as { last_sync?: { skipped?: unknown; skipped_reasons?: Record<string, number> } } | undefined)?.last_sync;
  if (typeof last?.skipped !== 'number' || last.skipped === 0) return '';
  const why = Object.entries(last.skipped_reasons ?? {}).map(([r, n]) => `${n} ${r.replace(/_/g, ' ')}`).join(', ');
  return `; ${last.skipped} malformed listing record(s) skipped (${why})`;
}

/** A component status in a few words: its `state` when it has one. */
function brief(v: unknown): string {
  if (v === null || v === undefined) return 'not running';
  if (v === 'missing') return 'not in this build';
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.degraded === 'string') return `unavailable: ${o.degraded}`;
    for (const k of ['state', 'status']) if (typeof o[k] === 'string') return o[k] as string;
    if (typeof o.playing === 'boolean') return o.playing ? 'playing' : 'idle';
  }
  return 'ok';
}
