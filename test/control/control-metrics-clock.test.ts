import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createControlServer } from '../../src/control/control-server.js';
import { silentLogger } from '../../src/log/logger.js';
import { controlRequest } from '../daemon/daemon-harness.js';
import { tmpDir } from '../helpers/tmp.js';
import { steppableWallClock } from '../helpers/wall-clock.js';

// GET /metrics on the control socket is cached for a second (scrapers in a loop cost one render a
// second). With the wall clock set back by a day (helpers/wall-clock.ts), a scrape must still be
// fresh after that second, not a day later. The handlers are stand-ins: the cache is under test.

afterEach(() => {
  vi.restoreAllMocks();
});

describe('control socket /metrics cache', () => {
  it('renders again after a second even when the clock was set back meanwhile', async () => {
    const clock = steppableWallClock();
    const socketPath = join(tmpDir('ta-ctl-clock-'), 'control.sock');
    let renders = 0;
    const server = createControlServer({
      socketPath, logger: silentLogger(),
      handlers: {
        status: () => ({ ok: true }), faces: () => [], syncFaces: async () => ({}), say: async () => ({}), enrollVoiceprint: async () => ({}),
        metrics: async () => ({ contentType: 'text/plain; version=0.0.4', text: `terminal_agent_renders ${++renders}\n` }),
      },
    });
    await server.start();
    onTestFinished(() => server.stop());
    expect((await controlRequest(socketPath, 'GET', '/metrics')).text).toBe('terminal_agent_renders 1\n');
    expect((await controlRequest(socketPath, 'GET', '/metrics')).text).toBe('terminal_agent_renders 1\n');
    clock.step(-24 * 60 * 60_000);
    await sleep(1100);
    expect((await controlRequest(socketPath, 'GET', '/metrics')).text).toBe('terminal_agent_renders 2\n');
  });
});
