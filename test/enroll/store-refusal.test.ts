import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { jpeg, listFiles, put, readJson, startRig, waitFor, type Rig } from './fixtures.js';

// agent.db refusing changes, as it refuses every change with SQLITE_FULL once another program has
// filled the file system of state_dir (seen by hand on a full loop-mounted ext4: the note of
// issue 11, r14). A full file system cannot be made here without root and a mount, so SQLite
// itself refuses the chosen change: a TEMP trigger on the enrollment's own connection (a real
// SQLite file) raises an error for it, and the same SqliteError reaches the agent.

interface LogLine { level: number; msg: string; file?: string; step?: string }

function logSink(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { logger, lines };
}

/** agent.db refuses `UPDATE outbox` to `state` (any state when omitted) until the returned function runs. */
function refuseState(rig: Rig, state?: string): () => void {
  const when = state ? `WHEN NEW.state = '${state}'` : '';
  rig.db.exec(`CREATE TEMP TRIGGER refuse_update BEFORE UPDATE OF state ON outbox ${when} BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
  return () => rig.db.exec('DROP TRIGGER temp.refuse_update');
}

const posts = (rig: Rig) => rig.emulator.requests.filter((r) => r.method === 'POST' && r.path === '/v1/api/faces').length;
const listings = (rig: Rig) => rig.emulator.requests.filter((r) => r.method === 'GET' && r.path === '/v1/api/faces').length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('agent.db refusing a change (a full disk)', () => {
  it('an upload the service answered is recorded once agent.db takes it: sent once, done under its own name, never failed', async () => {
    const { logger, lines } = logSink();
    const rig = await startRig({ logger });
    const allow = refuseState(rig, 'done');
    await put(rig.dir, 'faces/ann.jpg', jpeg());
    await waitFor('the refusal logged', () => lines.some((l) => l.msg.startsWith('agent.db refused to record the done step of faces/ann.jpg')));
    await sleep(600); // several retries (50 to 400 ms apart in the rig)
    expect(lines.filter((l) => l.msg.startsWith('agent.db refused')).length).toBeGreaterThan(1);
    expect(existsSync(join(rig.dir, 'faces/ann.jpg'))).toBe(true);
    expect(listFiles(join(rig.dir, 'failed'))).toEqual([]);
    expect(posts(rig)).toBe(1);

    allow();
    await waitFor('done/faces/ann.json', () => existsSync(join(rig.dir, 'done/faces/ann.json')));
    expect(listFiles(join(rig.dir, 'done/faces'))).toEqual(['ann.jpg', 'ann.json']);
    expect(listFiles(join(rig.dir, 'failed'))).toEqual([]);
    expect(posts(rig)).toBe(1);
    expect(rig.emulator.state.faces().map((f) => f.name)).toEqual(['ann']);
    expect(readJson(join(rig.dir, 'done/faces/ann.json')).face_id).toBe(rig.emulator.state.faces()[0]!.face_id);
  });

  it('a file whose "sending" mark is refused is not sent, and waits in the inbox without failing', async () => {
    const rig = await startRig();
    const allow = refuseState(rig, 'sending');
    await put(rig.dir, 'faces/ben.jpg', jpeg());
    await sleep(1_500);
    expect(posts(rig)).toBe(0);
    expect(existsSync(join(rig.dir, 'faces/ben.jpg'))).toBe(true);
    expect(listFiles(join(rig.dir, 'failed'))).toEqual([]);

    allow();
    await waitFor('done/faces/ben.json', () => existsSync(join(rig.dir, 'done/faces/ben.json')), 20_000);
    expect(listFiles(join(rig.dir, 'done/faces'))).toEqual(['ben.jpg', 'ben.json']);
    expect(posts(rig)).toBe(1);
  });

  it('the outcome of a group listing that is refused waits with backoff, blamed on agent.db, not on the listing', async () => {
    const { logger, lines } = logSink();
    const rig = await startRig({ logger });
    const allow = refuseState(rig);
    await put(rig.dir, 'faces/cat.jpg', jpeg());
    await waitFor('a listing', () => listings(rig) > 0);
    await sleep(1_500);
    // One listing settles the file's name; its outcome waits to be recorded (50, 100, 200, 400,
    // 400 ms in the rig), not settled again at every side check (every 50 ms).
    const refused = lines.filter((l) => l.msg.startsWith('agent.db refused to record the queued step of faces/cat.jpg'));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThan(12);
    expect(lines.filter((l) => l.msg === 'listing the group failed')).toEqual([]);
    expect(listings(rig)).toBe(1);
    expect(posts(rig)).toBe(0);

    allow();
    await waitFor('done/faces/cat.json', () => existsSync(join(rig.dir, 'done/faces/cat.json')), 20_000);
    expect(listFiles(join(rig.dir, 'done/faces'))).toEqual(['cat.jpg', 'cat.json']);
    expect(posts(rig)).toBe(1);
  });

  it('a file refused (empty) while agent.db refuses its row goes to failed/ under its own name once it is taken', async () => {
    const { logger, lines } = logSink();
    const rig = await startRig({ logger });
    rig.db.exec(`CREATE TEMP TRIGGER refuse_insert BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    await put(rig.dir, 'faces/dan.jpg', '');
    // Claimed, refused by agent.db, claimed again at each rescan (every second in the rig).
    await waitFor('two claims refused', () => lines.filter((l) => l.msg.startsWith('cannot take an enrollment file: agent.db refused it')).length >= 2);
    expect(listFiles(join(rig.dir, 'failed'))).toEqual([]);

    rig.db.exec('DROP TRIGGER temp.refuse_insert');
    await waitFor('failed/faces/dan.error.json', () => existsSync(join(rig.dir, 'failed/faces/dan.error.json')));
    expect(listFiles(join(rig.dir, 'failed/faces'))).toEqual(['dan.error.json', 'dan.jpg']);
    expect(readJson(join(rig.dir, 'failed/faces/dan.error.json')).code).toBe('TA_ERR_EMPTY_FILE');
  });
});
