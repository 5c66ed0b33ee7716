import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { jpeg, put, startRig, waitFor } from './fixtures.js';

/** Counts the outbox reads whose SQL contains `marker`, through better-sqlite3's shared Statement prototype. */
function countReads(db: { prepare(sql: string): object }, marker: string): { n: number } {
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<'all' | 'get', (...a: unknown[]) => unknown>;
  const counter = { n: 0 };
  for (const m of ['all', 'get'] as const) {
    const orig = proto[m];
    proto[m] = function (this: { source: string }, ...a: unknown[]) {
      if (this.source.includes(marker)) counter.n++;
      return orig.apply(this, a);
    };
    onTestFinished(() => {
      proto[m] = orig;
    });
  }
  return counter;
}

describe('outbox dispatcher', () => {
  it('reads nothing from the outbox once every file is finished, and wakes for the next file', async () => {
    const rig = await startRig();
    for (const n of ['ann', 'ben', 'cat']) await put(rig.dir, `faces/${n}.jpg`, jpeg());
    await waitFor('three results', () => ['ann', 'ben', 'cat'].every((n) => existsSync(join(rig.dir, `done/faces/${n}.json`))));
    await new Promise((r) => setTimeout(r, 300));
    const startable = countReads(rig.db, 'NOT EXISTS');
    await new Promise((r) => setTimeout(r, 2_500));
    expect(startable.n).toBe(0);
    await put(rig.dir, 'faces/dan.jpg', jpeg());
    await waitFor('done/faces/dan.json', () => existsSync(join(rig.dir, 'done/faces/dan.json')));
    expect(startable.n).toBeGreaterThan(0);
    expect(rig.emulator.state.faces().map((f) => f.name).sort()).toEqual(['ann', 'ben', 'cat', 'dan']);
  });
});
