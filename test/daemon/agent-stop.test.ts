import { describe, expect, it, onTestFinished } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { createAgent } from '../../src/daemon/agent.js';
import { openDatabase } from '../../src/db/database.js';
import { createServiceClient } from '../../src/client/service-client.js';
import { silentLogger } from '../../src/log/logger.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { makeTestConfig } from '../helpers/config.js';
import { startTestEmulator, terminalOf } from '../helpers/emulator.js';
import { makeTestAlsa } from '../helpers/alsa.js';
import { tmpDir } from '../helpers/tmp.js';
import { waitFor } from '../enroll/fixtures.js';

// The agent in this process (as `demo` runs it): a stop leaves no child process behind, whatever
// the components started meanwhile (a first sync of 40 images, its files made durable).

/** This process's child processes with their command lines. */
function children(): Array<{ pid: string; cmd: string }> {
  const pids: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) pids.push(...readFileSync(`/proc/self/task/${tid}/children`, 'utf8').split(' ').filter(Boolean));
  return pids.map((pid) => {
    try {
      return { pid, cmd: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ') };
    } catch {
      return { pid, cmd: '' };
    }
  });
}

describe('agent stop', () => {
  it('leaves no child process once stopped after a first sync', async () => {
    const root = tmpDir('ta-agent-stop-');
    const emulator = await startTestEmulator();
    const t = terminalOf(emulator);
    emulator.seedFaces(t.group_id, Array.from({ length: 40 }, (_, i) => ({ name: `p${i}`, image: faceImagePng([i * 20, 80, 200]) })));
    const config = makeTestConfig({
      state_dir: join(root, 'state'),
      service: { base_url: emulator.baseUrl, face_base_url: emulator.faceBaseUrl, terminal_secret: t.terminal_secret },
      enroll: { dir: join(root, 'enroll') },
    });
    const logger = silentLogger();
    const db = openDatabase({ path: join(config.state_dir, 'agent.db') });
    const client = createServiceClient({ config: config.service, logger, userAgent: 'test' });
    const agent = createAgent({ config, logger, db, client, metrics: new Registry(), env: makeTestAlsa(root).env });
    onTestFinished(async () => {
      await agent.stop();
      await client.close();
      db.close();
    });

    await agent.start();
    await waitFor('the first sync', () => (agent.status().faces as { last_sync: { ok?: boolean } | null }).last_sync?.ok);
    await agent.stop();
    await waitFor('no child process left', () => children().length === 0, 2_000);
    expect(children()).toEqual([]);
  });
});
