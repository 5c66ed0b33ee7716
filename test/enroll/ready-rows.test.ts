import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { createOutboxStore } from '../../src/enroll/outbox-store.js';
import { createReadyRows } from '../../src/enroll/ready-rows.js';
import { tmpDir } from '../helpers/tmp.js';

// The outbox loop's read-ahead of startable rows, against a real agent.db: rows come out in id
// order, one file at a time per name, the outbox is read again only when it may have changed, and
// claims wait while enough rows are ready.

function outbox() {
  const db = openDatabase({ path: join(tmpDir('ta-ready-'), 'agent.db') });
  const store = createOutboxStore(db);
  let n = 0;
  const queue = (name: string) => store.insert({
    kind: 'faces', name, source_path: `faces/${name}-${++n}.jpg`, source_size: 10, source_mtime_ms: 1, staged_path: `/s/${n}`, content_sha256: String(n), size: 10, state: 'queued',
  });
  const reads = () => {
    let count = 0;
    const startable = store.startable;
    store.startable = (now, limit) => {
      count++;
      return startable(now, limit);
    };
    return () => count;
  };
  return { db, store, queue, reads };
}

const none = new Set<number>();

describe('ready rows', () => {
  it('come in id order, a name\'s second file only after its first is finished', () => {
    const { db, store, queue } = outbox();
    const a1 = queue('ann');
    const b1 = queue('ben');
    queue('ann');
    const rows = createReadyRows(store);
    rows.refill(Date.now(), none, none);
    expect([rows.take(), rows.take(), rows.take()]).toEqual([a1, b1, undefined]);
    db.prepare("UPDATE outbox SET state = 'done' WHERE id = ?").run(a1);
    rows.markStale();
    // ben's row was taken (started): still queued in the outbox until its first commit.
    rows.refill(Date.now(), new Set([b1]), none);
    expect([rows.take(), rows.take()]).toEqual([a1 + 2, undefined]);
    db.close();
  });

  it('are read again only when stale, and skip rows the loop took already', () => {
    const { db, store, queue, reads } = outbox();
    const ids = [queue('a'), queue('b'), queue('c')];
    const rows = createReadyRows(store);
    const count = reads();
    rows.refill(Date.now(), new Set([ids[0]!]), none);
    expect(count()).toBe(1);
    expect(rows.size).toBe(2);
    // Rows left, or nothing changed since a read that found them all: no query.
    rows.refill(Date.now(), none, none);
    rows.take();
    rows.take();
    rows.refill(Date.now(), none, none);
    expect(count()).toBe(1);
    queue('d');
    rows.markStale();
    rows.refill(Date.now(), new Set(ids), none);
    expect(count()).toBe(2);
    expect(rows.size).toBe(1);
    db.close();
  });

  it('hold claims back while the loop runs and enough are ready; a drop (pause) or the end of the run lets them go', async () => {
    const { db, store, queue } = outbox();
    for (let i = 0; i < 5; i++) queue(`p${i}`);
    const rows = createReadyRows(store);
    await rows.whenBelow(1); // not running: at once
    rows.setRunning(true);
    rows.refill(Date.now(), none, none);
    let released = 0;
    void rows.whenBelow(3).then(() => released++);
    void rows.whenBelow(10).then(() => released++);
    await Promise.resolve();
    expect(released).toBe(1);
    rows.take();
    rows.take();
    rows.notify();
    await Promise.resolve();
    expect(released).toBe(1);
    rows.take();
    rows.notify();
    await Promise.resolve();
    expect(released).toBe(2);
    void rows.whenBelow(1).then(() => released++);
    rows.drop();
    await Promise.resolve();
    expect(released).toBe(3);
    rows.refill(Date.now(), none, none);
    void rows.whenBelow(1).then(() => released++);
    rows.setRunning(false);
    await Promise.resolve();
    expect(released).toBe(4);
    db.close();
  });

  it('count the rows queued since the last read as waiting too, until a read takes them in; a drop lets claims go', async () => {
    const { db, store, queue } = outbox();
    const rows = createReadyRows(store);
    rows.setRunning(true);
    const read = [queue('r0'), queue('r1')];
    rows.refill(Date.now(), none, none);
    let released = 0;
    const claim = () => void rows.whenBelow(4).then(() => released++);
    const releasedNow = async (n: number) => {
      await Promise.resolve();
      expect(released).toBe(n);
    };
    // Two read, not taken: a claim goes, and its row, queued, counts.
    claim();
    await releasedNow(1);
    queue('c1');
    rows.queued();
    queue('c2');
    rows.queued();
    // 2 read + 2 queued: the next claim waits, though only 2 rows are in the read-ahead.
    claim();
    await releasedNow(1);
    rows.take();
    rows.notify();
    await releasedNow(2);
    queue('c3');
    rows.queued();
    // A read takes the queued rows in: they count once, as read rows.
    rows.take();
    rows.markStale();
    // The two taken are started (still queued in the outbox until their first commit).
    rows.refill(Date.now(), new Set(read), none);
    expect(rows.size).toBe(3);
    claim();
    await releasedNow(3);
    rows.queued();
    claim();
    await releasedNow(3);
    // A pause drops the read-ahead and the count: claims go on (the files are then in the outbox).
    rows.drop();
    await releasedNow(4);
    db.close();
  });
});
