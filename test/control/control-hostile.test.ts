import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CONTROL_HEADERS_TIMEOUT_MS, createControlServer, type ControlServer } from '../../src/control/control-server.js';
import { silentLogger } from '../../src/log/logger.js';
import { controlRequest } from '../daemon/daemon-harness.js';
import { tmpDirManual } from '../helpers/tmp.js';

// The control socket against clients that misbehave, over a real unix socket: many at once, one
// that sends its headers a byte at a time, one that asks for /metrics and never reads, one that
// asks for it in a tight loop. Every other client must still be answered, and memory stay bounded.
// The handlers are stand-ins (the daemon's are tested in control-socket.test.ts): what is under
// test here is the server itself.

let tmp: { dir: string; remove(): void };
let server: ControlServer;
let socketPath: string;
let metricsCalls = 0;
const METRICS_TEXT = `# HELP x y\n${'terminal_agent_x{a="b"} 1\n'.repeat(2000)}`; // ~50 KB, like a real scrape

beforeAll(async () => {
  tmp = tmpDirManual('ta-ctl-hostile-');
  socketPath = join(tmp.dir, 'control.sock');
  server = createControlServer({
    socketPath, logger: silentLogger(),
    handlers: {
      status: () => ({ ok: true }), faces: () => [], syncFaces: async () => ({}), say: async () => ({}), enrollVoiceprint: async () => ({}),
      metrics: async () => {
        metricsCalls++;
        return { contentType: 'text/plain; version=0.0.4', text: METRICS_TEXT };
      },
    },
  });
  await server.start();
});
afterAll(async () => {
  await server?.stop();
  tmp?.remove();
});

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(socketPath);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** GET /status and how long it took. */
async function timedStatus(): Promise<{ status: number; ms: number }> {
  const t0 = Date.now();
  const res = await controlRequest(socketPath, 'GET', '/status');
  return { status: res.status, ms: Date.now() - t0 };
}

const rssMb = () => process.memoryUsage().rss / 1024 / 1024;

describe('the control socket under hostile clients', () => {
  it('answers 1,000 concurrent connections, each with its own request, with memory bounded', { timeout: 60_000 }, async () => {
    const before = rssMb();
    const answers = await Promise.all(Array.from({ length: 1000 }, () => controlRequest(socketPath, 'GET', '/status')));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(rssMb() - before).toBeLessThan(100);
  });

  it('1,000 connections that send nothing: others are answered at once, and the idle ones are closed after the headers timeout', { timeout: 60_000 }, async () => {
    const idle = await Promise.all(Array.from({ length: 1000 }, open));
    const closed = idle.map((s) => new Promise<string>((resolve) => {
      let got = '';
      s.on('data', (d: Buffer) => { got += d.toString(); });
      s.on('error', () => {});
      s.on('close', () => resolve(got));
    }));
    const t = await timedStatus();
    expect(t.status).toBe(200);
    expect(t.ms).toBeLessThan(1_000);
    const t0 = Date.now();
    const answers = await Promise.all(closed);
    expect(Date.now() - t0).toBeLessThan(CONTROL_HEADERS_TIMEOUT_MS + 3_000);
    expect(answers.every((a) => a.startsWith('HTTP/1.1 408'))).toBe(true);
  });

  it('a client that sends its headers one byte at a time is cut off with 408; others are answered meanwhile', { timeout: 30_000 }, async () => {
    const s = await open();
    let got = '';
    s.on('data', (d: Buffer) => { got += d.toString(); });
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
    s.on('error', () => {});
    const headers = `GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`;
    let i = 0;
    const t0 = Date.now();
    const timer = setInterval(() => {
      if (!s.destroyed && i < headers.length) s.write(headers[i++]!);
    }, 100);
    try {
      await sleep(1_000);
      expect((await timedStatus()).ms).toBeLessThan(1_000);
      await closed;
    } finally {
      clearInterval(timer);
    }
    expect(Date.now() - t0).toBeLessThan(CONTROL_HEADERS_TIMEOUT_MS + 3_000);
    expect(got).toMatch(/^HTTP\/1\.1 408/);
    expect(i).toBeLessThan(headers.length);
  });

  it('a client that asks for /metrics over and over and never reads is cut off after its first answer; others are answered', { timeout: 30_000 }, async () => {
    const s = await open();
    s.pause(); // never reads
    s.on('error', () => {});
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
    const req = 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n';
    let sent = 0;
    let stop = false;
    const pump = () => {
      while (!stop && !s.destroyed) {
        sent++;
        if (!s.write(req)) return void s.once('drain', pump);
      }
    };
    const before = rssMb();
    const calls = metricsCalls;
    pump();
    // The server answers one request a connection and stops reading what else comes (at most
    // 64 KB of it), then closes the connection once its answer is with the kernel and a linger
    // has passed: the client cannot make it scrape again or hold its memory.
    const cutOff = await Promise.race([closed.then(() => true), sleep(3_000).then(() => false)]);
    expect(cutOff).toBe(true);
    expect(metricsCalls - calls).toBeLessThanOrEqual(1);
    expect((await timedStatus()).ms).toBeLessThan(1_000);
    expect(rssMb() - before).toBeLessThan(64);
    stop = true;
    expect(sent).toBeLessThan(1_000_000);
  });

  it('a client that reads /metrics in a tight loop costs at most one scrape a second, and others are answered', { timeout: 30_000 }, async () => {
    let stop = false;
    let scrapes = 0;
    const calls = metricsCalls;
    const loop = (async () => {
      while (!stop) {
        const res = await controlRequest(socketPath, 'GET', '/metrics');
        expect(res.text).toBe(METRICS_TEXT);
        scrapes++;
      }
    })();
    await sleep(2_000);
    const t = await timedStatus();
    stop = true;
    await loop;
    expect(t.ms).toBeLessThan(500);
    expect(scrapes).toBeGreaterThan(10);
    expect(metricsCalls - calls).toBeLessThanOrEqual(3);
  });
});
