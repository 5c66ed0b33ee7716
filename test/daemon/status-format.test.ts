import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/daemon/status-format.js';
import type { AgentStatus } from '../../src/control/types.js';
import type { RecheckStatus } from '../../src/faces/recheck-status.js';

// The human `status` output for states that are awkward to reach through a running daemon.

const base: AgentStatus = {
  version: '9.9.9', pid: 42, state: 'running', started_at: '2026-11-23T00:00:00.000Z', uptime_s: 61, config_file: '/etc/terminal-agent/config.yaml',
  state_dir: '/var/lib/terminal-agent', faces: { cached: 3, last_sync: null, last_ok_sync_at: null }, outbox: {}, recent_failures: [],
  audio: { output_device: 'default', input_device: 'default', speech: { state: 'idle' }, voice: { state: 'idle' } },
  components: { faces: {}, speech: {}, voice: {}, enroll: { kinds: {} } },
  reload: { count: 0, last_at: null, last_error: null }, watchdog: { enabled: false, interval_ms: null, last_fed_at: null, failing: [] },
};

describe('formatStatus', () => {
  it('says when enrollment is not running and why (enroll.dir not mounted yet)', () => {
    const why = 'enroll.dir /media/usb/enroll cannot be used: ENOENT: no such file or directory; mount it';
    const out = formatStatus({ ...base, components: { ...base.components, enroll: { degraded: why, kinds: {} } } });
    expect(out.split('\n')).toContain(`ENROLLMENT:  not running, retried every 30 s: ${why}`);
    expect(formatStatus(base)).not.toContain('ENROLLMENT');
  });

  it('shows how far image re-checks have come round the group, and how fresh the budget keeps the cache', () => {
    const rechecks: RecheckStatus = {
      mode: 'conditional', paced_by: 'requests', oldest_check_at: '2026-11-23T00:00:00.000Z', oldest_check_age_s: 1260,
      round_s: 3000, budget: { requests_per_minute: 200, bytes_per_hour: 64 * 1024 * 1024 }, last_hour: { requests: 11_900, bytes: 4096 }, deferred: 8800,
    };
    const line = (r: RecheckStatus) => formatStatus({ ...base, faces: { ...base.faces, rechecks: r } }).split('\n').find((l) => l.startsWith('rechecks:'));
    expect(line(rechecks)).toBe('rechecks:    oldest check 21m0s ago, 8800 waiting for the budget; the service answers 304; a replaced image is in the cache within about 50m0s (one round of the group); last hour 11900 requests, 4.0KB');
    expect(line({ ...rechecks, mode: 'full', paced_by: 'bytes', round_s: 36_000 })).toContain('the service answers no conditional request: every re-check is a download, 64.0MB/h budget; a replaced image is in the cache within about 10h0m');
    expect(formatStatus(base)).not.toContain('rechecks:');
  });
});
