import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../helpers/cli.js';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { faceImagePng } from '../../src/daemon/sample-images.js';
import { openEventStream } from '../../src/events/sse-client.js';
import type { AgentEvent } from '../../src/events/event-bus.js';
import { tmpDirManual } from '../helpers/tmp.js';
import { controlRequest, daemonFiles, isReady, spawnDaemon, type DaemonFiles, type DaemonProcess } from '../daemon/daemon-harness.js';

// GET /events of a real daemon process: what the components publish reaches a program on the
// terminal, and faces/index.json readers get a version they can check.

let emulator: Emulator;
let tmp: { dir: string; remove(): void };
let files: DaemonFiles;
let daemon: DaemonProcess;

async function waitFor(events: AgentEvent[], pred: (e: AgentEvent) => boolean, ms = 8000): Promise<AgentEvent> {
  const end = Date.now() + ms;
  for (;;) {
    const e = events.find(pred);
    if (e) return e;
    if (Date.now() > end) throw new Error(`no such event; got ${events.map((x) => x.type).join(', ')}`);
    await sleep(20);
  }
}

describe('the event stream of a running daemon', () => {
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0 });
    emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Ada', image: faceImagePng([200, 150, 100]) }]);
    tmp = tmpDirManual('ta-ev-');
    files = daemonFiles(join(tmp.dir, 'agent'), emulator);
    daemon = spawnDaemon(files.configPath);
    await daemon.waitLog(isReady);
    await daemon.waitLog((l) => l.msg === 'face sync done');
  });
  afterAll(async () => {
    daemon?.signal('SIGTERM');
    await daemon?.exited;
    await emulator?.close();
    tmp?.remove();
  });

  it('a sync announces the index version written beside index.json; resuming replays it without the progress events', async () => {
    const events: AgentEvent[] = [];
    const stream = openEventStream({ socketPath: files.socketPath, onEvent: (e) => events.push(e) });
    try {
      await stream.ready;
      emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Grace', image: faceImagePng([10, 200, 10]) }]);
      await controlRequest(files.socketPath, 'POST', '/faces/sync');
      const synced = await waitFor(events, (e) => e.type === 'faces.synced');
      expect(synced.data).toMatchObject({ reason: 'manual', changed: true, added: 1, total: 2 });
      const indexText = readFileSync(join(files.stateDir, 'faces', 'index.json'), 'utf8');
      const version = readFileSync(join(files.stateDir, 'faces', 'index.version'), 'utf8').trim();
      expect(synced.data.index_version).toBe(version);
      expect(version).toBe(createHash('sha256').update(indexText).digest('hex').slice(0, 16));
      expect(Array.isArray(JSON.parse(indexText))).toBe(true);
      const progress = events.filter((e) => e.type === 'faces.sync.progress');
      // Grace's image, and the cached face's asked again (a manual sync re-checks the group).
      expect(progress.at(-1)!.data).toMatchObject({ phase: 'committing', images_done: 2, images_total: 2 });
      expect(events.indexOf(progress.at(-1)!)).toBeLessThan(events.indexOf(synced));
      // GET /status tells the same version.
      const status = (await controlRequest(files.socketPath, 'GET', '/status')).json() as { components: { faces: { index_version: string } } };
      expect(status.components.faces.index_version).toBe(version);

      const replay: AgentEvent[] = [];
      const again = openEventStream({ socketPath: files.socketPath, lastEventId: events[0]!.id - 1, onEvent: (e) => replay.push(e) });
      await again.ready;
      expect((await waitFor(replay, (e) => e.type === 'faces.synced')).id).toBe(synced.id);
      again.close();
      expect(replay.map((e) => e.type)).not.toContain('faces.sync.progress');
    } finally {
      stream.close();
    }
  });

  it('a dropped enrollment file is announced as queued, started, then done with its result file', async () => {
    const events: AgentEvent[] = [];
    const stream = openEventStream({ socketPath: files.socketPath, types: ['enroll.'], onEvent: (e) => events.push(e) });
    try {
      await stream.ready;
      writeFileSync(join(files.enrollDir, 'faces', 'Hedy.png'), faceImagePng([30, 60, 90]));
      const done = await waitFor(events, (e) => e.type === 'enroll.done', 15_000);
      expect(events.map((e) => e.type).slice(0, 3)).toEqual(['enroll.queued', 'enroll.started', 'enroll.done']);
      expect(done.data).toMatchObject({ kind: 'faces', name: 'Hedy', face_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
      const result = JSON.parse(readFileSync(String(done.data.result_file), 'utf8')) as { face_id: string };
      expect(result.face_id).toBe(done.data.face_id);
    } finally {
      stream.close();
    }
  });

  it("docs/operations.md's event consumer reloads the face index when a sync changes it, and only then", async () => {
    const readme = readFileSync(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
    const code = /<!-- events-consumer:start -->\n```js\n([\s\S]*?)```\n<!-- events-consumer:end -->/.exec(readme)![1]!;
    expect(code.split('\n').filter(Boolean).length).toBeLessThanOrEqual(20);
    const script = join(tmp.dir, 'reload-faces.mjs');
    writeFileSync(script, code);
    const child = spawn(process.execPath, [script], { env: { SOCK: files.socketPath, DIR: join(files.stateDir, 'faces') } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
    try {
      const lines = async (n: number) => {
        const end = Date.now() + 8000;
        while (out.trim().split('\n').filter(Boolean).length < n) {
          if (Date.now() > end) throw new Error(`consumer printed: ${out}`);
          await sleep(20);
        }
      };
      await lines(1);
      const before = readFileSync(join(files.stateDir, 'faces', 'index.version'), 'utf8').trim();
      expect(out).toContain(`index ${before}: `);
      await sleep(300); // connected
      await controlRequest(files.socketPath, 'POST', '/faces/sync'); // nothing changed: no reload
      emulator.seedFaces(emulator.terminals[0]!.group_id, [{ name: 'Katherine', image: faceImagePng([90, 10, 60]) }]);
      await controlRequest(files.socketPath, 'POST', '/faces/sync');
      await lines(2);
      const after = readFileSync(join(files.stateDir, 'faces', 'index.version'), 'utf8').trim();
      const printed = out.trim().split('\n');
      expect(printed).toHaveLength(2);
      expect(printed[1]).toBe(`index ${after}: ${JSON.parse(readFileSync(join(files.stateDir, 'faces', 'index.json'), 'utf8')).length} faces`);
      expect(after).not.toBe(before);
    } finally {
      child.kill();
    }
  });
});
