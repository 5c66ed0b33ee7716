import { access, readFile } from 'node:fs/promises';
import type { ServiceClient } from '../client/types.js';
import type { Db } from '../db/database.js';
import { inTransaction } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { backoffDelay, wait, type BackoffPolicy } from '../util/backoff.js';
import type { Layout } from './layout.js';
import type { OutboxStore } from './outbox-store.js';
import type { OutboxRow, RowMeta, StepOutcome } from './types.js';
import type { Commit } from './commit-batcher.js';

// knowledge/ is a mirror, not an inbox: files stay, an edit uploads entry ID again (POST with an
// id replaces it, so retries are harmless), a deleted file deletes entry ID. After a burst of
// changes one POST /knowledge/notify follows; the debt is kept in the database so a restart pays it.

const NOTIFY_KEY = 'knowledge_notify';

export function createKnowledgeUploader(deps: { client: ServiceClient; store: OutboxStore; commit: Commit }) {
  const { client, store } = deps;
  const owed = () => store.setCounter(NOTIFY_KEY, store.counter(NOTIFY_KEY) + 1);
  return {
    async upload(row: OutboxRow, signal: AbortSignal): Promise<StepOutcome> {
      await deps.commit(() => store.startAttempt(row.id, row.action, JSON.parse(row.meta_json) as RowMeta), { durable: true });
      if (row.action === 'delete') {
        try {
          await client.deleteKnowledge(row.name, { signal, retries: 0 });
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
          return { state: 'done', result: { id: row.name, action: 'deleted', note: 'the entry was not on the service' }, commit: owed };
        }
        return { state: 'done', result: { id: row.name, action: 'deleted' }, commit: owed };
      }
      const content = (await readFile(row.staged_path!, 'utf8')).replace(/^\uFEFF/, '');
      await client.addKnowledge({ id: row.name, content }, { signal, retries: 0 });
      return {
        state: 'done',
        result: { id: row.name, action: 'uploaded', bytes: row.size },
        commit: () => {
          store.mirrorUploaded(row.name);
          owed();
        },
      };
    },
    ifUnknown: (): 'retry' => 'retry',
  };
}

async function present(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

async function gone(layout: Layout, id: string): Promise<boolean> {
  return !(await present(layout.abs(`knowledge/${id}.txt`))) && !(await present(layout.abs(`knowledge/${id}.md`)));
}

/**
 * Entries whose file is gone (neither ID.txt nor ID.md) and still gone settleMs later (an editor
 * may delete and rewrite): queue their deletion. Returns how many.
 */
export async function queueKnowledgeDeletions(layout: Layout, store: OutboxStore, db: Db, settleMs: number, signal: AbortSignal): Promise<number> {
  const missing = [];
  for (const m of store.mirrorAll()) if (await gone(layout, m.id)) missing.push(m);
  if (missing.length === 0 || !(await wait(settleMs, signal))) return 0;
  let queued = 0;
  for (const m of missing) {
    if (!(await gone(layout, m.id))) continue;
    inTransaction(db, () => {
      const current = store.mirrorGet(m.id);
      if (!current || current.content_sha256 !== m.content_sha256) return;
      store.mirrorDelete(m.id);
      // Never uploaded and nothing on its way: the service has nothing to delete.
      if (!m.uploaded && !store.isActiveName('knowledge', m.id)) return;
      store.insert({
        kind: 'knowledge', name: m.id, source_path: m.file, source_size: 0, source_mtime_ms: 0, staged_path: null,
        content_sha256: '', size: 0, action: 'delete', state: 'queued',
      });
      queued++;
    });
  }
  return queued;
}

export interface KnowledgeNotifierDeps {
  client: ServiceClient;
  store: OutboxStore;
  db: Db;
  debounceMs: number;
  retry: BackoffPolicy;
  logger: Logger;
}

/** POST /knowledge/notify once a burst of knowledge changes has been quiet for debounceMs. */
export function createKnowledgeNotifier(deps: KnowledgeNotifierDeps) {
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let stopped = false;
  let sending: Promise<void> | undefined;

  function schedule(ms: number): void {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      sending = send().finally(() => {
        sending = undefined;
      });
    }, ms);
  }

  async function send(): Promise<void> {
    const owed = deps.store.counter(NOTIFY_KEY);
    if (owed === 0) return;
    try {
      await deps.client.notifyKnowledge({});
      failures = 0;
      // Changes recorded while the request ran keep the debt, and their own poke re-arms the timer.
      inTransaction(deps.db, () => {
        if (deps.store.counter(NOTIFY_KEY) === owed) deps.store.setCounter(NOTIFY_KEY, 0);
      });
      deps.logger.info({ changes: owed }, 'knowledge notify sent');
    } catch (err) {
      const delay = backoffDelay(deps.retry, failures++);
      deps.logger.warn({ err, retryInMs: delay }, 'knowledge notify failed; will retry');
      schedule(delay);
    }
  }

  return {
    /** A knowledge change was recorded: (re)start the quiet period. */
    poke: () => schedule(deps.debounceMs),
    start(): void {
      stopped = false;
      if (deps.store.counter(NOTIFY_KEY) > 0) schedule(deps.debounceMs);
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await sending;
    },
  };
}
