// The free-space gauges, apart from disk-floor.ts so that `status` (which formats a reading) does
// not load prom-client.
import { Gauge, type Registry } from '../metrics/prom.js';
import type { DiskReading } from './disk-floor.js';

/** Free space, the floor, and a 0/1 "nearly full" on /metrics, read at scrape time. */
export function registerDiskGauges(registry: Registry, read: () => DiskReading | undefined): void {
  let last: DiskReading | undefined;
  const gauge = (name: string, help: string, value: (r: DiskReading) => number) => new Gauge({
    name, help, registers: [registry],
    collect() {
      // One statfs per scrape: the first gauge reads, the others reuse it.
      if (name === 'terminal_agent_state_free_bytes') last = read();
      if (last) this.set(value(last));
    },
  });
  gauge('terminal_agent_state_free_bytes', 'Free bytes on the file system of state_dir (for the agent\'s user).', (r) => r.free_bytes);
  gauge('terminal_agent_state_min_free_bytes', 'Free space the agent keeps on that file system (state_min_free).', (r) => r.min_free_bytes);
  gauge('terminal_agent_disk_nearly_full', '1 when free space on state_dir is below state_min_free: caches stop growing (disk nearly full).', (r) => (r.nearly_full ? 1 : 0));
}
