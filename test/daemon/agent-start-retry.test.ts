import { describe, expect, it, onTestFinished } from 'vitest';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { createAgent } from '../../src/daemon/agent.js';
import { openDatabase } from '../../src/db/database.js';
import { createServiceClient } from '../../src/client/service-client.js';
import { createLogger } from '../../src/log/logger.js';
import { makeTestConfig } from '../helpers/config.js';
import { startTestEmulator, terminalOf } from '../helpers/emulator.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { tmpDir } from '../helpers/tmp.js';
import { createEventBus, type AgentEvent } from '../../src/events/event-bus.js';
import { jpeg, waitFor } from '../enroll/fixtures.js';

// enroll.dir on a USB stick or a share that is not mounted when the agent starts: a dangling
// symlink, as an unmounted mount point behind a link looks. The agent starts without the folders,
// says why, keeps face sync running, and takes the files once the folders can be used.

describe('agent start with enroll.dir not there yet', () => {
  it('runs without enrollment, says why, and starts it once the folder can be used; nothing dropped is lost', async () => {
    const root = tmpDir('ta-retry-');
    const stick = join(root, 'stick'); // not "mounted" yet
    symlinkSync(stick, join(root, 'usb'));
    const emulator = await startTestEmulator();
    const t = terminalOf(emulator);
    const config = makeTestConfig({
      state_dir: join(root, 'state'),
      service: { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: t.terminal_secret },
      enroll: { dir: join(root, 'usb', 'enroll'), settle_time: 100, rescan_interval: 1000 },
    });
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: 'debug', destination: new Writable({ write(c: Buffer, _e, cb) { for (const l of c.toString().split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } }) });
    const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
    const client = createServiceClient({ config: config.service, logger, userAgent: 'test' });
    const events = createEventBus();
    const published: AgentEvent[] = [];
    events.subscribe((e) => published.push(e));
    const agent = createAgent({ config, logger, db, client, metrics: new Registry(), events, env: makeTestAlsa(root).env, startRetryMs: 200 });
    onTestFinished(async () => {
      await agent.stop();
      await client.close();
      db.close();
    });

    await agent.start(); // does not throw, and does not spin
    const enroll = () => agent.status().enroll as { degraded?: string };
    expect(enroll().degraded).toMatch(new RegExp(`^enroll.dir ${join(root, 'usb', 'enroll')} cannot be used: ENOENT.*mount it`));
    expect(lines.some((l) => l.level === 'error' && l.component_failed === 'enroll' && String(l.msg).includes('tries again'))).toBe(true);
    await waitFor('the face sync, which does not need the folders', () => (agent.status().faces as { last_sync: unknown }).last_sync);

    // The stick arrives, with a face an operator copied onto it elsewhere.
    mkdirSync(join(stick, 'enroll', 'faces'), { recursive: true });
    writeFileSync(join(stick, 'enroll', 'faces', 'ada.jpg'), jpeg());
    await waitFor('ada uploaded', () => existsSync(join(stick, 'enroll', 'done', 'faces', 'ada.json')), 10_000);
    expect(enroll().degraded).toBeUndefined();
    expect(emulator.state.faces().map((f) => f.name)).toEqual(['ada']);
    expect(lines.some((l) => l.component_started === 'enroll')).toBe(true);
    // Programs following GET /events saw the same: degraded, then recovered, then the upload
    // (announced once its result file is written and the row finalized, just after ada.json appears).
    await waitFor('enroll.done published', () => published.some((e) => e.type === 'enroll.done'));
    const types = published.filter((e) => e.type.startsWith('component.') || e.type === 'enroll.done').map((e) => `${e.type}:${String(e.data.component ?? e.data.name)}`);
    expect(types).toEqual(['component.degraded:enroll', 'component.recovered:enroll', 'enroll.done:ada']);
    expect(published.find((e) => e.type === 'component.degraded')!.data).toMatchObject({ retrying: true, reason: expect.stringContaining('cannot be used') });
  });

  it('stop() during the retries ends them at once', async () => {
    const root = tmpDir('ta-retry-');
    symlinkSync(join(root, 'nowhere'), join(root, 'usb'));
    const config = makeTestConfig({ state_dir: join(root, 'state'), enroll: { dir: join(root, 'usb', 'enroll') } });
    const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
    const logger = createLogger({ level: 'silent' });
    const client = createServiceClient({ config: config.service, logger, userAgent: 'test' });
    const agent = createAgent({ config, logger, db, client, metrics: new Registry(), env: makeTestAlsa(root).env, startRetryMs: 60_000 });
    await agent.start();
    const t0 = Date.now();
    await agent.stop();
    expect(Date.now() - t0).toBeLessThan(5_000);
    await client.close();
    db.close();
  });
});
