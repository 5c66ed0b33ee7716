// One reading of the disk floor (disk-floor.ts), as `status --json`, the console and the metrics
// show it. A file without imports, so the web console's build can share the type.

export interface DiskReading {
  /** The folder whose file system is measured (state_dir). */
  dir: string;
  free_bytes: number;
  total_bytes: number;
  min_free_bytes: number;
  /** Free space is below the floor: the caches have stopped growing. */
  nearly_full: boolean;
}
