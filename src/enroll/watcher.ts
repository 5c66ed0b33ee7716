import { readdir } from 'node:fs/promises';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../log/logger.js';
import { wait } from '../util/backoff.js';
import { isIgnoredName, toRel, type Layout } from './layout.js';
import { KINDS } from './types.js';

// Finds candidate files: chokidar events while running, plus a scan at start and every
// rescan_interval, because events are missed (files that arrived while the daemon was down,
// folders moved in whole, network file systems, an exhausted inotify watch limit).

export interface FolderWatcherDeps {
  layout: Layout;
  rescanMs: number;
  logger: Logger;
  /** A file (relative to enroll.dir) that may be new or changed. */
  onCandidate(rel: string): void;
  /** Something under knowledge/ disappeared, or a rescan finished: look for deleted entries. */
  onKnowledgeScan(): void;
}

export function createFolderWatcher(deps: FolderWatcherDeps) {
  const { layout, logger } = deps;
  let watcher: FSWatcher | undefined;
  let loop: Promise<void> | undefined;
  let ac: AbortController | undefined;

  function emit(absPath: string): void {
    const rel = toRel(layout.root, absPath);
    if (rel) deps.onCandidate(rel);
  }

  async function list(dir: string): Promise<{ name: string; dir: boolean }[]> {
    try {
      return (await readdir(dir, { withFileTypes: true })).map((d) => ({ name: d.name, dir: d.isDirectory() }));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ err, dir }, 'cannot read an enrollment folder');
      return [];
    }
  }

  async function rescan(): Promise<void> {
    for (const kind of KINDS) {
      const inbox = layout.inbox(kind);
      for (const e of await list(inbox)) {
        if (isIgnoredName(e.name)) continue;
        if (!e.dir) {
          deps.onCandidate(`${kind}/${e.name}`);
        } else if (kind === 'faces') {
          // faces/NAME/any.jpg: one level of person folders.
          for (const f of await list(`${inbox}/${e.name}`)) {
            if (!f.dir && !isIgnoredName(f.name)) deps.onCandidate(`${kind}/${e.name}/${f.name}`);
          }
        }
      }
    }
    deps.onKnowledgeScan();
  }

  return {
    rescan,
    async start(): Promise<void> {
      ac = new AbortController();
      const w = watch(KINDS.map((k) => layout.inbox(k)), {
        ignoreInitial: true,
        followSymlinks: false,
        depth: 1,
        ignored: (path: string) => isIgnoredName(path.slice(path.lastIndexOf('/') + 1)),
      });
      watcher = w;
      w.on('add', emit);
      w.on('change', emit);
      w.on('unlink', (p: string) => {
        if (toRel(layout.root, p)?.startsWith('knowledge/')) deps.onKnowledgeScan();
      });
      w.on('error', (err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code;
        logger.warn({ err }, code === 'ENOSPC'
          ? 'inotify watch limit reached (fs.inotify.max_user_watches): new files are found by the periodic rescan only'
          : 'folder watcher error: new files are found by the periodic rescan');
      });
      await new Promise<void>((resolve) => w.once('ready', () => resolve()));
      await rescan();
      const signal = ac.signal;
      loop = (async () => {
        while (await wait(deps.rescanMs, signal)) {
          await rescan().catch((err: unknown) => logger.warn({ err }, 'rescan failed'));
        }
      })();
    },
    async stop(): Promise<void> {
      ac?.abort();
      await loop;
      await watcher?.close();
      watcher = undefined;
      loop = undefined;
    },
  };
}
