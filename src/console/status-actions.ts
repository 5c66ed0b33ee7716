import type { AgentStatus, StatusAction } from '../control/status-types.js';

export type { StatusAction } from '../control/status-types.js';

// The overview's "what is wrong and what fixes it": each problem `status` shows, with the step an
// operator takes, and the console call that does it where there is one.

function degradedReason(v: unknown): string | undefined {
  if (v && typeof v === 'object' && typeof (v as { degraded?: unknown }).degraded === 'string') return (v as { degraded: string }).degraded;
  return undefined;
}

export function statusActions(s: AgentStatus): StatusAction[] {
  const out: StatusAction[] = [];
  const last = s.faces.last_sync;
  if (last && !last.ok) {
    const auth = last.error_code === 'TA_ERR_AUTH';
    out.push({
      component: 'faces',
      problem: `the last face sync failed: ${last.error ?? last.error_code ?? 'error'}`,
      fix: auth
        ? 'the service refused the terminal secret: correct service.terminal_secret_file (or the credential), then systemctl reload terminal-agent'
        : 'the agent tries again by itself; check the network and the service address (terminal-agent doctor)',
      ...(auth ? {} : { action: { method: 'POST' as const, path: '/api/faces/sync', label: 'Sync now' } }),
    });
  } else if (!last) {
    out.push({ component: 'faces', problem: 'no face sync has finished yet', fix: 'wait for the first sync, or start one', action: { method: 'POST', path: '/api/faces/sync', label: 'Sync now' } });
  }
  const fixes: Record<string, string> = {
    enroll: 'mount or create enroll.dir, writable by the agent; it tries again every 30 s by itself',
    speech: 'check audio.output_device and the sound card (terminal-agent doctor); speech works again after a restart',
    voice: 'check audio.input_device and the microphone (terminal-agent doctor)',
    faces: 'see the daemon log (journalctl -u terminal-agent)',
  };
  for (const [name, v] of Object.entries(s.components)) {
    const reason = degradedReason(v);
    if (v === 'missing') out.push({ component: name, problem: `${name} is not part of this build`, fix: 'install the full terminal-agent package' });
    else if (reason) out.push({ component: name, problem: reason, fix: fixes[name] ?? 'see terminal-agent doctor' });
  }
  let failed = 0;
  for (const states of Object.values(s.outbox)) failed += states.failed ?? 0;
  if (s.recent_failures.some((f) => f.source === 'outbox') || failed > 0) {
    out.push({ component: 'enroll', problem: `${failed} enrolled file(s) failed`, fix: 'open Enrollment: each failed file shows its reason; fix the file and press Retry' });
  }
  for (const f of s.watchdog.failing) out.push({ component: 'watchdog', problem: f, fix: 'the daemon restarts itself if this lasts; see journalctl -u terminal-agent' });
  if (s.reload.last_error) out.push({ component: 'config', problem: `the last reload failed: ${s.reload.last_error}`, fix: 'run terminal-agent config check, correct the file, then systemctl reload terminal-agent' });
  return out;
}
