import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { createFdOutput, type OutFd } from '../../src/cli/fd-output.js';
import { CLI_ENTRY, REPO_ROOT } from '../helpers/cli.js';

// The CLI prints with writeSync on fds 1 and 2 (src/cli/fd-output.ts): a slow reader of a
// non-blocking pipe must get every byte in order, and a reader that went away (EPIPE) ends the
// command quietly as before.

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}

function harness(script: (fd: number, data: string | Uint8Array) => number) {
  const streams = { 1: new PassThrough(), 2: new PassThrough() };
  const got = { 1: '', 2: '' };
  streams[1].on('data', (d: Buffer) => (got[1] += `[stream]${d.toString()}`));
  streams[2].on('data', (d: Buffer) => (got[2] += `[stream]${d.toString()}`));
  let broken = 0;
  const out = createFdOutput({ stream: (fd: OutFd) => streams[fd], onBrokenPipe: () => broken++, write: script });
  return { out, got, broken: () => broken };
}

describe('fd-output', () => {
  it('writes what a short write left, then goes on through the stream after EAGAIN, in order', () => {
    const written: Buffer[] = [];
    let calls = 0;
    const h = harness((_fd, data) => {
      calls++;
      const bytes = Buffer.from(data);
      if (calls === 3) throw errno('EAGAIN');
      // The first call writes 2 bytes: half of the 'é'.
      const n = calls === 1 ? 2 : bytes.length;
      written.push(bytes.subarray(0, n));
      return n;
    });
    h.out.write(1, 'héllo\n');
    expect(Buffer.concat(written).toString()).toBe('héllo\n');
    h.out.write(1, 'second\n');
    h.out.write(1, 'third\n');
    expect(calls).toBe(3);
    expect(h.got[1]).toBe('[stream]second\n[stream]third\n');
  });

  it('EPIPE on stdout calls onBrokenPipe once and drops the rest; on stderr it is dropped quietly', () => {
    const h = harness(() => {
      throw errno('EPIPE');
    });
    h.out.write(1, 'a\n');
    h.out.write(1, 'b\n');
    h.out.write(2, 'c\n');
    expect(h.broken()).toBe(1);
    expect(h.got).toEqual({ 1: '', 2: '' });
  });

  it('other errors are thrown; useStream sends later text through the stream', () => {
    const h = harness(() => {
      throw errno('EIO');
    });
    expect(() => h.out.write(2, 'x\n')).toThrow('EIO');
    h.out.useStream(2);
    h.out.write(2, 'y\n');
    expect(h.got[2]).toBe('[stream]y\n');
  });

  it('a real non-blocking pipe read slowly gets every byte in order', async () => {
    // process.stdout on a pipe sets O_NONBLOCK on it: writeSync then meets EAGAIN once the pipe is full.
    const code = `
      const { createFdOutput } = await import(${JSON.stringify(join(REPO_ROOT, 'dist/cli/fd-output.js'))});
      process.stdout;
      const out = createFdOutput({ stream: () => process.stdout, onBrokenPipe: () => process.exit(3) });
      for (let i = 0; i < 4000; i++) out.write(1, String(i).padStart(6, '0') + ' ' + 'x'.repeat(500) + '\\n');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pause();
    await sleep(300);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.stdout.resume();
    const exit = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(exit).toBe(0);
    const lines = Buffer.concat(chunks).toString().split('\n').filter(Boolean);
    expect(lines).toHaveLength(4000);
    lines.forEach((l, i) => expect(l.slice(0, 6)).toBe(String(i).padStart(6, '0')));
  });

  it('the built CLI whose reader has gone (`terminal-agent --help | true`) exits 0 without a word', async () => {
    const child = spawn(process.execPath, [CLI_ENTRY, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exit = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ exit, stderr }).toEqual({ exit: 0, stderr: '' });
  });
});
