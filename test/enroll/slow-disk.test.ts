import { renameSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pipelineDepth } from '../../src/enroll/pipeline-depth.js';
import { jpeg, listResults, put, startRig, waitFor } from './fixtures.js';
import { join } from 'node:path';
import { slowFlush } from '../helpers/slow-flush.js';
import { tmpDir } from '../helpers/tmp.js';

// A burst of faces on a disk whose flush is slow, as a Raspberry Pi's SD card (tens of ms).
// Faked, because such a disk cannot exist on this VM (its flushes take 1 to 3 ms): agent.db's WAL
// flush is the real fdatasync followed by a wait of FLUSH_MS (test/helpers/slow-flush.ts).
// Everything else is real: the emulator over loopback, the SQLite file, the folders, chokidar.
//
// Each stage of a file's way crosses a WAL sync, and the syncer runs one at a time; with windows
// sized for a fast disk (four claims, twice upload_concurrency uploads started) a burst moved
// about 4 files per sync, whatever the wire could take (3.9 here, r49). The outbox widens them by
// the syncs' typical time (src/enroll/pipeline-depth.ts): 10.9 to 12.6 files shared a sync, 7.5 to 8
// with two busy loops beside the test (r49).

const FLUSH_MS = 40;
const FILES = 240;

/** A gauge's value in Prometheus' text format (NaN when absent). */
const gauge = (metrics: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);

describe('enrollment on a disk with slow flushes', () => {
  it('shows agent.db\'s sync time and the depth taken from it in its metrics', async () => {
    const rig = await startRig();
    await put(rig.dir, 'faces/alice.jpg', jpeg());
    await waitFor('done/faces/alice.json', () => listResults(join(rig.dir, 'done/faces')).includes('alice.json'));
    const metrics = await rig.metrics.metrics();
    const syncSeconds = gauge(metrics, 'terminal_agent_db_sync_seconds');
    // This machine's disk, whatever it is: a real fdatasync took some time, and far less than a second.
    expect(syncSeconds).toBeGreaterThan(0);
    expect(syncSeconds).toBeLessThan(1);
    expect(gauge(metrics, 'terminal_agent_enroll_pipeline_depth')).toBe(pipelineDepth(syncSeconds * 1000));
  });

  it('moves a burst through more than 5 files per WAL sync, each face uploaded once', async () => {
    const syncs = { n: 0 };
    const rig = await startRig({ flush: slowFlush(FLUSH_MS, syncs) });
    const before = syncs.n;
    // Written beside the inbox, then renamed in all at once: a burst, not a trickle that the test's
    // own writes (on the event loop the agent shares here) would pace.
    const names = Array.from({ length: FILES }, (_, i) => `p${String(i).padStart(3, '0')}.jpg`);
    const incoming = tmpDir('ta-slow-disk-');
    for (const n of names) await put(incoming, n, jpeg());
    for (const n of names) renameSync(join(incoming, n), join(rig.dir, 'faces', n));
    await waitFor('every result in done/faces', () => listResults(join(rig.dir, 'done/faces')).filter((f) => f.endsWith('.json')).length === FILES, 60_000);
    const perSync = FILES / (syncs.n - before);
    expect(perSync, `${syncs.n - before} WAL syncs for ${FILES} files`).toBeGreaterThan(5);
    const uploaded = rig.emulator.state.faces().map((f) => `${f.name}.jpg`).sort();
    expect(uploaded).toEqual(names);
    expect(listResults(join(rig.dir, 'done/faces')).filter((f) => f.endsWith('.jpg'))).toHaveLength(FILES);
    // What an operator's Prometheus sees of it: the card's flush time and the depth taken from it.
    const metrics = await rig.metrics.metrics();
    expect(gauge(metrics, 'terminal_agent_db_sync_seconds')).toBeGreaterThanOrEqual(FLUSH_MS / 1000);
    expect(gauge(metrics, 'terminal_agent_enroll_pipeline_depth')).toBeGreaterThanOrEqual(7);
  }, 90_000);
});
