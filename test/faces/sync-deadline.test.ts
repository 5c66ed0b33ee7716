import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createControlServer } from '../../src/control/control-server.js';
import { openDatabase } from '../../src/db/database.js';
import { createFaceSync } from '../../src/faces/face-sync.js';
import { faceSyncDeadlineMs } from '../../src/faces/sync-deadline.js';
import { silentLogger } from '../../src/log/logger.js';
import { runCliProcess } from '../helpers/cli.js';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { clientFor, drip, json, startHostileService } from '../helpers/hostile-service.js';
import { tmpDir } from '../helpers/tmp.js';
import { jpeg, staged } from './face-fixtures.js';

// Every wait has an end the operator can compute from the config: a sync pass is cut at
// faceSyncDeadlineMs(service), and `faces sync` through the daemon waits that plus a margin.

const ID = (n: number) => n.toString(16).padStart(32, '0');

describe('the deadline of a sync pass', () => {
  it('is derived from service.request_timeout and retries', () => {
    expect(faceSyncDeadlineMs({ request_timeout: 15_000, retries: 4 })).toBe(750_000);
    expect(faceSyncDeadlineMs({ request_timeout: 5_000, retries: 0 })).toBe(50_000);
    expect(faceSyncDeadlineMs()).toBe(750_000);
  });

  it('cuts a pass of many slow images short with a timeout error, keeps what it finished, and the agent lives on', async () => {
    const image = jpeg();
    const faces = Array.from({ length: 24 }, (_, i) => ({ face_id: ID(i + 1), group_id: 'g', id: i + 1, name: `f${i + 1}` }));
    const svc = await startHostileService((path) => {
      if (path === '/v1/api/faces') return (_q, res) => json(res, faces);
      if (path === `/v1/api/faces/${ID(1)}/image`) return (_q, res) => res.writeHead(200, { 'content-type': 'image/jpeg' }).end(image);
      return (_q, res) => {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length });
        drip(res, image, 50);
      };
    });
    const stateDir = tmpDir('ta-deadline-');
    const { client, config } = clientFor(svc, { request_timeout: 1_000 }, stateDir);
    const db = openDatabase({ path: join(stateDir, 'agent.db') });
    const sync = createFaceSync({ config, db, client, logger: silentLogger(), deleteGraceMs: 0, passDeadlineMs: 1_500, backoff: { initialMs: 60_000, maxMs: 60_000 } });
    try {
      const t0 = Date.now();
      const report = await sync.syncNow();
      expect(Date.now() - t0).toBeLessThan(3_000); // 24 slow images at 4 at a time would take 6 s
      expect(report.ok).toBe(false);
      expect(report.error).toMatchObject({ code: 'TA_ERR_TIMEOUT' });
      expect(report.error!.message).toMatch(/face sync took longer than 1\.5 ?s .* cut short/);
      expect(sync.status()).toMatchObject({ state: 'backoff', consecutive_failures: 1 });
      expect(Object.keys(staged(join(stateDir, 'faces'))).length).toBe(1); // face 1's finished download is kept
    } finally {
      await sync.stop();
      db.close();
    }
  });
});

describe('faces sync through the daemon', () => {
  it('waits no longer than the daemon would (the pass deadline plus a margin), not a fixed 10 minutes', { timeout: 40_000 }, async () => {
    const stateDir = tmpDir('ta-cli-deadline-');
    const socket = join(stateDir, 'control.sock');
    const config = join(stateDir, 'config.yaml');
    writeFileSync(config, [
      'service:',
      '  base_url: http://127.0.0.1:9',
      '  face_base_url: http://127.0.0.1:9/v1/api',
      `  terminal_secret: "${TEST_TERMINAL_SECRET}"`,
      '  request_timeout: 100ms',
      '  retries: 0',
      `state_dir: ${stateDir}`,
      'control:',
      `  socket: ${socket}`,
      '',
    ].join('\n'));
    // A daemon whose sync never answers (a wedged build): the real control server, a handler that hangs.
    const server = createControlServer({
      socketPath: socket, logger: silentLogger(),
      handlers: {
        status: () => ({}), faces: () => [], syncFaces: () => new Promise<never>(() => {}),
        say: async () => ({}), enrollVoiceprint: async () => ({}), metrics: async () => ({ contentType: 'text/plain', text: '' }),
      },
    });
    await server.start();
    try {
      const t0 = Date.now();
      const res = await runCliProcess(['faces', 'sync', '--config', config], { timeoutMs: 35_000 });
      const took = Date.now() - t0;
      // faceSyncDeadlineMs = 10 x 100 ms = 1 s, plus the 10 s margin.
      expect(took).toBeGreaterThan(10_000);
      expect(took).toBeLessThan(20_000);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/did not answer POST \/faces\/sync within 11s/);
    } finally {
      await server.stop();
    }
  });
});
