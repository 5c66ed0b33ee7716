import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/daemon/status-format.js';
import type { AgentStatus } from '../../src/control/types.js';

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
});
