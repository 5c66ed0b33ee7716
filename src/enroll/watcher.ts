import type { Stats } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { setImmediate } from 'node:timers/promises';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../log/logger.js';
import { wait } from '../util/backoff.js';
import { isIgnoredName, toRel, type Layout } from './layout.js';
import { KINDS } from './types.js';
import { withLinkedSignal } from '../util/linked-signal.js';

// Finds candidate files: chokidar events while running, plus a scan at start and every
// rescan_interval, because events are missed (files that arrived while the daemon was down,
// folders moved in whole, network file systems, an exhausted inotify watch limit).
//
// Burst mode: chokidar re-reads and lstats a whole folder on every file added to or removed from
// it, which is quadratic when a thousand files arrive at once (seconds of CPU on a Pi). While
// that many files are waiting, chokidar is closed and the folders are scanned instead (one
// readdir each, no stat): every half settle_time, and every ARRIVING_SCAN_MS while each scan finds
// more files than the last; chokidar is reopened once the folders are small again.

/**
 * Burst mode's scan period while the last scan found more files than the one before (a copy still
 * going on). A file is settled only settle_time after a scan first saw it, so the files copied
 * after the first scan of a burst would wait for the next one, half a settle_time later, and the
 * uploads run dry meanwhile.
 */
const ARRIVING_SCAN_MS = 100;

/** Files waiting (settling, or in the folders) above which the watcher switches to scanning. */
const BURST_ENTER = 128;
const BURST_LEAVE = 32;
/**
 * A scan hands this many files to the tracker in one turn of the event loop, then lets the
 * daemon's other work run (`status`, speech, uploads): a folder holding thousands of files
 * would otherwise hold the loop for as long as they all take.
 */
const OFFERS_PER_TURN = 64;

export interface FolderWatcherDeps {
  layout: Layout;
  rescanMs: number;
  /** Scan period in burst mode. */
  burstScanMs: number;
  logger: Logger;
  /** Files seen and not yet taken (settling or being claimed). */
  load(): number;
  /**
   * A file (relative to enroll.dir) that may be new or changed; `notAFile` when a listing showed
   * it is a FIFO, socket, device node, or a folder where only files belong; `scanned` when a
   * rescan offers it (every file of the inboxes, again and again in a burst) rather than an event;
   * `seen`: chokidar's lstat of it, made for the event (the stability tracker's first look).
   */
  onCandidate(rel: string, notAFile?: boolean, scanned?: boolean, seen?: Stats): void;
  /** A listing of this folder (relative to enroll.dir) showed a name that is not valid UTF-8. */
  onUndecodable?(relDir: string): void;
  /** Something under knowledge/ disappeared, or a rescan finished: look for deleted entries. */
  onKnowledgeScan(): void;
}

export function createFolderWatcher(deps: FolderWatcherDeps) {
  const { layout, logger } = deps;
  let watcher: FSWatcher | undefined;
  let loop: Promise<void> | undefined;
  let ac: AbortController | undefined;
  let burst = false;
  let kick: (() => void) | undefined;

  // Each kind of watcher error is said once while this watcher lives: with thousands of files each
  // one fails alike, and the watcher is closed and opened again around every burst of files.
  const said = new Set<string>();

  function emit(absPath: string, seen?: Stats): void {
    const rel = toRel(layout.root, absPath);
    if (rel) deps.onCandidate(rel, undefined, undefined, seen);
    if (!burst && deps.load() > BURST_ENTER) {
      burst = true;
      logger.info({ waiting: deps.load() }, 'many files arriving: scanning the enrollment folders instead of watching them');
      void closeWatcher();
      kick?.();
    }
  }

  async function openWatcher(): Promise<void> {
    const w = watch(KINDS.map((k) => layout.inbox(k)), {
      ignoreInitial: true,
      followSymlinks: false,
      depth: 1,
      ignored: (path: string) => isIgnoredName(path.slice(path.lastIndexOf('/') + 1)),
    });
    watcher = w;
    // chokidar lstats every file it reports (followSymlinks: false) and hands the stats over.
    w.on('add', (p: string, st?: Stats) => emit(p, st));
    w.on('change', (p: string, st?: Stats) => emit(p, st));
    w.on('unlink', (p: string) => {
      if (toRel(layout.root, p)?.startsWith('knowledge/')) deps.onKnowledgeScan();
    });
    w.on('error', (err: unknown) => {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (said.has(code)) return;
      said.add(code);
      if (code === 'ENOSPC') {
        logger.warn({ err, errno: code, rescan_interval_ms: deps.rescanMs }, `inotify watch limit reached (fs.inotify.max_user_watches): every file is still taken, but found by the rescan every ${deps.rescanMs / 1000} s instead of at once; raise the limit: echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-terminal-agent.conf && sudo sysctl --system`);
      } else {
        logger.warn({ err, errno: code }, 'folder watcher error: new files are found by the periodic rescan');
      }
    });
    await new Promise<void>((resolve) => w.once('ready', () => resolve()));
  }

  async function closeWatcher(): Promise<void> {
    const w = watcher;
    watcher = undefined;
    await w?.close();
  }

  async function list(dir: string): Promise<{ name: string; dir: boolean; special: boolean }[]> {
    try {
      return (await readdir(dir, { withFileTypes: true })).map((d) => ({
        // A symbolic link of any name is refused with its reason (claim.ts), never followed.
        name: d.name, dir: d.isDirectory(), special: !d.isFile() && !d.isDirectory(),
      }));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ err, dir }, 'cannot read an enrollment folder');
      return [];
    }
  }

  /** Offers every file of the inboxes; returns how many there are. */
  async function rescan(): Promise<number> {
    let count = 0;
    let offered = 0;
    const offer = async (rel: string, notAFile: boolean, scanned: boolean) => {
      deps.onCandidate(rel, notAFile, scanned);
      if (++offered % OFFERS_PER_TURN === 0) await setImmediate();
    };
    for (const kind of KINDS) {
      const inbox = layout.inbox(kind);
      const entries = await list(inbox);
      // readdir gives U+FFFD for bytes that are not UTF-8: such a name cannot be opened by it.
      if (entries.some((e) => e.name.includes('\ufffd'))) deps.onUndecodable?.(kind);
      for (const e of entries) {
        if (isIgnoredName(e.name)) continue;
        if (!e.dir) {
          count++;
          await offer(`${kind}/${e.name}`, e.special, true);
        } else if (kind === 'faces') {
          // faces/NAME/any.jpg: one level of person folders.
          const inner = await list(`${inbox}/${e.name}`);
          if (inner.some((f) => f.name.includes('\ufffd'))) deps.onUndecodable?.(`${kind}/${e.name}`);
          for (const f of inner) {
            if (f.dir || isIgnoredName(f.name)) continue;
            count++;
            await offer(`${kind}/${e.name}/${f.name}`, f.special, true);
          }
        } else {
          // A folder in voiceprints/ or speakers/, where only files belong.
          await offer(`${kind}/${e.name}`, true, true);
        }
      }
    }
    deps.onKnowledgeScan();
    return count;
  }

  /** Sleeps until the next scan: short in burst mode, shorter while files keep arriving, or until an event switches to burst mode. */
  async function pause(signal: AbortSignal, arriving: boolean): Promise<boolean> {
    const ctl = new AbortController();
    kick = () => ctl.abort();
    const ms = !burst ? deps.rescanMs : arriving ? Math.min(deps.burstScanMs, ARRIVING_SCAN_MS) : deps.burstScanMs;
    const ok = await withLinkedSignal([signal, ctl.signal], (linked) => wait(ms, linked));
    kick = undefined;
    return ok || !signal.aborted;
  }

  return {
    rescan,
    async start(): Promise<void> {
      ac = new AbortController();
      burst = false;
      await openWatcher();
      let count = await rescan();
      if (count > BURST_ENTER) {
        burst = true;
        await closeWatcher();
      }
      const signal = ac.signal;
      loop = (async () => {
        let arriving = false;
        while (await pause(signal, arriving)) {
          try {
            const before = count;
            count = await rescan();
            if (burst && count < BURST_LEAVE && deps.load() < BURST_LEAVE && !signal.aborted) {
              burst = false;
              await openWatcher();
              // What arrived between that scan and the watcher's ready has no event (it starts
              // with ignoreInitial): one more scan, or it would wait for the next rescan_interval.
              await rescan();
              logger.info('enrollment folders watched again');
            } else if (!burst && count > BURST_ENTER) {
              burst = true;
              await closeWatcher();
            }
            arriving = burst && count > before;
          } catch (err) {
            logger.warn({ err }, 'rescan failed');
          }
        }
      })();
    },
    async stop(): Promise<void> {
      ac?.abort();
      await loop;
      await closeWatcher();
      loop = undefined;
    },
  };
}
