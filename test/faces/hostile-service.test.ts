import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/log/logger.js';
import { createFaceSync } from '../../src/faces/face-sync.js';
import { formatStatus } from '../../src/daemon/status-format.js';
import type { AgentStatus } from '../../src/control/types.js';
import { tmpDir } from '../helpers/tmp.js';
import { writeFileSync } from 'node:fs';
import { runCliProcess } from '../helpers/cli.js';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { clientFor, drip, json, startHostileService, type Route } from '../helpers/hostile-service.js';
import { jpeg, readIndex } from './face-fixtures.js';
import { ID, imageRoutes, rec, syncAgainst } from './hostile-fixtures.js';

// Face sync against a service that misbehaves (test/helpers/hostile-service.ts): one bad record or
// one slow image costs that face, never the pass; what was skipped is said in the report, the
// status, the log and the metrics.

describe('a listing with malformed records', () => {
  it('skips each bad record, syncs every good one, and says how many and why in the report, status, log and metrics', async () => {
    const listing = [
      rec(1, 'alice'),
      { ...rec(2), name: null }, // name null
      { ...rec(3), face_id: 3 }, // face_id a number
      { face_id: ID(4) }, // name missing
      { ...rec(5), id: { x: 1 } }, // id of the wrong type
      'not-a-record',
      { ...rec(6), face_id: 'zz' }, // not hex: skipped as before
      rec(7, 'bob'),
      rec(7, 'bob again'), // the same face_id twice: the first one counts
    ];
    const image = jpeg();
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, listing) : imageRoutes(new Map(), image)(path));
    const h = await syncAgainst(svc);
    try {
      const report = await h.sync.syncNow();

      expect(report).toMatchObject({ ok: true, added: 2, failed: 0, skipped: 7 });
      expect(report.skipped_reasons).toEqual({
        name_not_a_string: 2, face_id_not_a_string: 1, id_not_a_number: 1, not_an_object: 1, face_id_not_32_hex: 1, duplicate_face_id: 1,
      });
      expect(report.skipped_records[0]).toBe(`record 1 (face_id "${ID(2)}") has no string name`);
      expect(readIndex(h.facesDir).map((e) => e.name).sort()).toEqual(['alice', 'bob']);

      const status = h.sync.status();
      expect(status.last_sync).toMatchObject({ skipped: 7 });
      const shown = formatStatus(statusWith(status));
      expect(shown).toContain('7 malformed listing record(s) skipped (2 name not a string, 1 face id not a string, 1 id not a number, 1 not an object, 1 face id not 32 hex, 1 duplicate face id)');

      const warn = h.lines.find((l) => String(l.msg).includes('malformed and were skipped'));
      expect(warn).toMatchObject({ level: 'warn', skipped: 7 });
      const metrics = await h.registry.metrics();
      expect(metrics).toContain('terminal_agent_face_records_skipped_total{reason="name_not_a_string"} 2');
      expect(metrics).toContain('terminal_agent_face_records_skipped_total{reason="face_id_not_a_string"} 1');
    } finally {
      await h.close();
    }
  });

  it('a record whose name is not valid UTF-8 is skipped; the other records of the same answer sync', async () => {
    const good = Buffer.from(JSON.stringify([rec(1, 'alice'), rec(2, 'XX'), rec(3, 'carol')]));
    // Replace the two X of "XX" by bytes that are not UTF-8.
    const at = good.indexOf('"XX"') + 1;
    good[at] = 0xff;
    good[at + 1] = 0xfe;
    const image = jpeg();
    const svc = await startHostileService((path) => path === '/v1/api/faces'
      ? (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(good)
      : imageRoutes(new Map(), image)(path));
    const h = await syncAgainst(svc);
    try {
      const report = await h.sync.syncNow();
      expect(report).toMatchObject({ ok: true, added: 2, skipped: 1, skipped_reasons: { invalid_utf8: 1 } });
      expect(readIndex(h.facesDir).map((e) => e.name).sort()).toEqual(['alice', 'carol']);
    } finally {
      await h.close();
    }
  });
});

describe('faces sync (the command) with a malformed listing', () => {
  it('syncs the good records, names each skipped one, and exits 1 as for a face whose image failed', async () => {
    const image = jpeg();
    const listing = [rec(1, 'alice'), { ...rec(2), name: null }, { ...rec(3), face_id: 3 }];
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, listing) : imageRoutes(new Map(), image)(path));
    const stateDir = tmpDir('ta-hostile-cli-');
    const config = join(stateDir, 'config.yaml');
    writeFileSync(config, [
      'service:', `  base_url: ${svc.url}`, `  face_base_url: ${svc.faceBaseUrl}`, `  terminal_secret: "${TEST_TERMINAL_SECRET}"`, '  retries: 0',
      `state_dir: ${stateDir}`, 'control:', `  socket: ${join(stateDir, 'control.sock')}`, '',
    ].join('\n'));
    const res = await runCliProcess(['faces', 'sync', '--config', config]);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain('1 added');
    expect(res.stdout).toContain('2 malformed record(s) of the listing were skipped:');
    expect(res.stdout).toContain(`skipped: record 1 (face_id "${ID(2)}") has no string name`);
    expect(res.stdout).toContain('skipped: record 2 has no string face_id');
    const list = await runCliProcess(['faces', 'list', '--json', '--config', config]);
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as unknown[]).length).toBe(1);
    expect(JSON.parse(list.stderr)).toMatchObject({ warning: '2 malformed record(s) in the service\'s answer were left out', code: 'TA_WARN_SKIPPED_RECORDS', skipped: 2 });
  });
});

describe('an image that drips or never comes', () => {
  it('a body sent one byte a second fails that face within the deadline; the other faces sync', async () => {
    const image = jpeg();
    const slow = new Map<string, Route>([[ID(2), (_q, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length });
      drip(res, image, 100); // well under the gap timeout: only an overall deadline can end it
    }]]);
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [rec(1), rec(2), rec(3)]) : imageRoutes(slow, image)(path));
    const h = await syncAgainst(svc, { request_timeout: 1_000 });
    try {
      const t0 = Date.now();
      const report = await h.sync.syncNow();
      expect(Date.now() - t0).toBeLessThan(4_000);
      expect(report).toMatchObject({ ok: true, added: 2, failed: 1 });
      expect(report.failures[0]).toMatchObject({ face_id: ID(2), code: 'TA_ERR_TIMEOUT' });
      expect(report.failures[0]!.message).toMatch(/within 1000 ms/);
      expect(readIndex(h.facesDir).map((e) => e.face_id).sort()).toEqual([ID(1), ID(3)]);
    } finally {
      await h.close();
    }
  });

  it('headers with no body ever: the face fails in bounded time', async () => {
    const image = jpeg();
    const mute = new Map<string, Route>([[ID(1), (_q, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length });
      res.flushHeaders();
    }]]);
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [rec(1), rec(2)]) : imageRoutes(mute, image)(path));
    const h = await syncAgainst(svc, { request_timeout: 1_000 });
    try {
      const t0 = Date.now();
      const report = await h.sync.syncNow();
      expect(Date.now() - t0).toBeLessThan(4_000);
      expect(report).toMatchObject({ ok: true, added: 1, failed: 1 });
      expect(report.failures[0]).toMatchObject({ face_id: ID(1), code: 'TA_ERR_TIMEOUT' });
    } finally {
      await h.close();
    }
  });

  it('an image that never ends is cut at the size cap and fails that face only', async () => {
    const head = jpeg(1024).subarray(0, 1000);
    const endless = new Map<string, Route>([[ID(1), (_q, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      res.write(head);
      drip(res, () => Buffer.alloc(64 * 1024, 0x41), 1);
    }]]);
    const image = jpeg();
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [rec(1), rec(2)]) : imageRoutes(endless, image)(path));
    const stateDir = tmpDir('ta-hostile-');
    const { client, config } = clientFor(svc, { request_timeout: 10_000 }, stateDir);
    const db = openDatabase({ path: join(stateDir, 'agent.db') });
    const sync = createFaceSync({ config, db, client, logger: createLogger({ level: 'silent' }), deleteGraceMs: 0, maxImageBytes: 2 * 1024 * 1024 });
    try {
      const report = await sync.syncNow();
      expect(report).toMatchObject({ ok: true, added: 1, failed: 1 });
      expect(report.failures[0]!.message).toMatch(/larger than 2097152 bytes/);
      expect(svc.bytesSent).toBeLessThan(8 * 1024 * 1024);
    } finally {
      await sync.stop();
      db.close();
    }
  });

  // A connection that drops mid-body is the network's fault, not the image's: that pass fails and
  // keeps its downloads (face-sync-failures.test.ts). A server that sends more bytes than it
  // announced, or fewer and then nothing, is the image's.
  it('an image longer or shorter than its Content-Length fails that face, not the pass', async () => {
    const image = jpeg(4096);
    const liars = new Map<string, Route>([
      [ID(1), (_q, res) => {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 1000 });
        res.socket?.end(image); // far more bytes than announced, then the connection closes
      }],
      [ID(2), (_q, res) => {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length * 2 });
        res.write(image); // fewer bytes than announced, and the connection stays open
      }],
      [ID(4), (_q, res) => {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 10_000_000_000 }); // 10 GB announced
        res.write(image);
      }],
    ]);
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [rec(1), rec(2), rec(3), rec(4)]) : imageRoutes(liars, image)(path));
    const h = await syncAgainst(svc, { request_timeout: 2_000 });
    try {
      const report = await h.sync.syncNow();
      expect(report).toMatchObject({ ok: true, added: 1, failed: 3 });
      expect(report.failures.map((f) => [f.face_id, f.code]).sort()).toEqual([[ID(1), 'TA_ERR_BAD_RESPONSE'], [ID(2), 'TA_ERR_TIMEOUT'], [ID(4), 'TA_ERR_BAD_RESPONSE']]);
      expect(report.failures.find((f) => f.face_id === ID(4))!.message).toMatch(/announced as 10000000000 bytes, larger than 33554432/);
      expect(readIndex(h.facesDir).map((e) => e.face_id)).toEqual([ID(3)]);
    } finally {
      await h.close();
    }
  });

  it('Content-Type is not believed: the bytes decide the type, and HTML sent as image/jpeg is refused', async () => {
    const image = jpeg();
    const typed = new Map<string, Route>([
      [ID(1), (_q, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(image)], // a JPEG called PNG
      [ID(2), (_q, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(image)], // a JPEG called HTML
      [ID(3), (_q, res) => res.writeHead(200, { 'content-type': 'image/jpeg' }).end('<html><body>login</body></html>')],
    ]);
    const svc = await startHostileService((path) => path === '/v1/api/faces' ? (_q, res) => json(res, [rec(1), rec(2), rec(3)]) : imageRoutes(typed, image)(path));
    const h = await syncAgainst(svc);
    try {
      const report = await h.sync.syncNow();
      expect(report).toMatchObject({ ok: true, added: 2, failed: 1 });
      expect(report.failures[0]).toMatchObject({ face_id: ID(3), code: 'TA_ERR_BAD_RESPONSE' });
      expect(readIndex(h.facesDir).map((e) => e.image).sort()).toEqual([`${ID(1)}.jpg`, `${ID(2)}.jpg`]);
    } finally {
      await h.close();
    }
  });
});

/** A status with only the faces component filled in, for formatStatus. */
function statusWith(faces: unknown): AgentStatus {
  return {
    version: 't', pid: 1, state: 'running', started_at: new Date().toISOString(), uptime_s: 1, config_file: null, state_dir: '/x',
    faces: { cached: 2, last_sync: null, last_ok_sync_at: null }, outbox: {}, recent_failures: [],
    audio: { output_device: 'default', input_device: 'default', speech: null, voice: null },
    components: { faces }, reload: { count: 0, last_at: null, last_error: null },
    watchdog: { enabled: false, interval_ms: null, last_fed_at: null, failing: [] },
  };
}
