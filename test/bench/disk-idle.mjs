// What an idle daemon writes to disk: a Raspberry Pi's SD card wears by the bytes written, and a
// terminal is idle most of its life. The real daemon (dist/main.js run, as the unit runs it) with
// a group of BENCH_GROUPS faces (default "20,10000", 2 KB images) and `faces.sync_interval` of SYNC
// (default 15s, so that a short run sees many syncs; the default config's is 5m), once its first
// sync is over and SETTLE_SECONDS (20) have passed, is watched for IDLE_SECONDS (120) with nothing
// changing: no file dropped, the group as it was. Printed: the bytes the daemon wrote
// (/proc/PID/io write_bytes) and, on a BENCH_FS loop mount, the bytes its device took (the
// journal and metadata included: what the card takes), per sync, and per day at the default 5m.
// There is no plain loop to pair it with: a sync that finds no change needs to write nothing, so
// the figure is read against zero (r25: one row of sync history, its WAL frames and their sync).
//   npm run build && BENCH_FS=ext4 node test/bench/disk-idle.mjs
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { seedMembers } from './lib/images.mjs';
import { benchWorkDir, deviceWrittenBytes, settleDisk } from './lib/bench-fs.mjs';
import { indexEntries, procWriteBytes, spawnDaemon, writeDaemonConfig, ROOT } from './lib/daemon-run.mjs';

const { startEmulator } = await import(join(ROOT, 'dist/emulator/index.js'));
const GROUPS = (process.env.BENCH_GROUPS ?? '20,10000').split(',').map(Number);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 120);
const SETTLE_SECONDS = Number(process.env.SETTLE_SECONDS ?? 20);
const SYNC = process.env.SYNC ?? '15s';
const syncMs = Number(/^(\d+)s$/.exec(SYNC)?.[1] ?? NaN) * 1000;
if (!Number.isFinite(syncMs)) throw new Error(`SYNC=${SYNC}: give seconds, e.g. 15s`);

const workDir = benchWorkDir('ta-bench-disk-idle-');
if (!workDir) process.exit(0);
console.log(`disk-idle benchmark: folders on ${workDir.how}; sync_interval ${SYNC}, ${IDLE_SECONDS} s watched after ${SETTLE_SECONDS} s settling`);
const kb = (bytes) => (bytes / 1024).toFixed(1);
let failed = false;
for (const group of GROUPS) {
  const dir = join(workDir.dir, `group-${group}`);
  const emulator = await startEmulator({ port: 0, tts: 'tone' });
  let daemon;
  try {
    const terminal = emulator.terminals[0];
    seedMembers(emulator, terminal.group_id, group);
    mkdirSync(dir);
    daemon = spawnDaemon(dir, writeDaemonConfig(dir, emulator, terminal, `faces:\n  sync_interval: ${SYNC}\n`), { stdout: 'pipe' });
    daemon.child.stdout.on('data', (b) => appendFileSync(join(dir, 'daemon.log'), b));
    await daemon.ready;
    const index = join(dir, 'state', 'faces', 'index.json');
    for (const t0 = Date.now(); indexEntries(index) < group; await sleep(200)) {
      if (Date.now() - t0 > 300_000) throw new Error(`the first sync of ${group} faces did not finish in 5 minutes`);
    }
    await sleep(SETTLE_SECONDS * 1000);
    settleDisk(dir);
    const lists0 = emulator.requests.filter((r) => r.method === 'GET' && r.path === '/v1/api/faces').length;
    const written0 = procWriteBytes(daemon.pid);
    const device0 = deviceWrittenBytes(dir);
    await sleep(IDLE_SECONDS * 1000);
    settleDisk(dir);
    const written = procWriteBytes(daemon.pid) - written0;
    const device = device0 === null ? null : deviceWrittenBytes(dir) - device0;
    const syncs = emulator.requests.filter((r) => r.method === 'GET' && r.path === '/v1/api/faces').length - lists0;
    const images = emulator.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/image')).length;
    if (daemon.child.exitCode !== null) throw new Error(`the daemon exited (${daemon.child.exitCode}) while idle`);
    if (syncs === 0) throw new Error(`no sync ran in ${IDLE_SECONDS} s (sync_interval ${SYNC}); the daemon's last log lines:\n${readFileSync(join(dir, 'daemon.log'), 'utf8').trim().split('\n').slice(-8).join('\n')}`);
    const perDay = (bytes) => ((bytes / syncs) * (86_400_000 / 300_000)) / 1048576;
    console.log(`  ${group} faces: ${syncs} syncs with no change; the daemon wrote ${kb(written)} KB, ${kb(written / syncs)} KB a sync` +
      (device === null ? '' : `; the device took ${kb(device)} KB, ${kb(device / syncs)} KB a sync`) +
      `; at the default 5m: ${perDay(written).toFixed(1)} MB a day${device === null ? '' : ` (device ${perDay(device).toFixed(1)} MB)`}; image downloads in all ${images} (the first sync's ${group})`);
    if (images !== group) failed = true;
  } finally {
    await daemon?.stop();
    await emulator.close();
  }
}
workDir.close();
process.exitCode = failed ? 1 : 0;
