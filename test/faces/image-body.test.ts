import { afterEach, describe, expect, it } from 'vitest';
import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageTap } from '../../src/faces/image-check.js';
import { readBatch, type Batch } from '../../src/faces/image-body.js';
import { jpeg } from './face-fixtures.js';

let server: Server | undefined;

afterEach(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** A real loopback answer: `bytes` sent in 8 KB pieces; with `cutAfter`, the socket is destroyed after that many. */
async function answer(bytes: Buffer, cutAfter?: number): Promise<IncomingMessage> {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': bytes.length });
    let at = 0;
    const more = () => {
      if (cutAfter !== undefined && at >= cutAfter) return res.socket?.destroy();
      if (at >= bytes.length) return res.end();
      res.write(bytes.subarray(at, at + 8192), () => setImmediate(more));
      at += 8192;
    };
    more();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => get({ host: '127.0.0.1', port, path: '/' }, (res) => {
    // As the service client does (response-body.ts): an error waits in the stream for its reader.
    res.on('error', () => {});
    resolve(res);
  }).on('error', reject));
}

const tap = () => new ImageTap(1 << 20, (n) => new Error(`too large: ${n}`));

describe('image bodies read in batches', () => {
  it('reads a body larger than a batch in batches of the limit, the last one marked as the end, every byte once', async () => {
    const image = jpeg(150_000);
    const body = await answer(image);
    const t = tap();
    const batches: Batch[] = [];
    do batches.push(await readBatch(body, t, 64 * 1024));
    while (!batches.at(-1)!.ended);
    expect(batches.length).toBeGreaterThanOrEqual(3);
    expect(batches.slice(0, -1).every((b) => b.bytes >= 64 * 1024 && !b.ended)).toBe(true);
    expect(Buffer.concat(batches.flatMap((b) => b.chunks))).toEqual(image);
    expect(t.bytes).toBe(image.length);
    expect(t.verdict()).toEqual({ type: 'jpeg' });
  });

  it('a connection cut while the reader is between two batches fails the next batch instead of leaving it waiting', async () => {
    const body = await answer(jpeg(150_000), 80 * 1024);
    const first = await readBatch(body, tap(), 64 * 1024);
    expect(first.ended).toBe(false);
    // The cut happens while this reader writes its first batch and reads nothing.
    await sleep(200);
    await expect(Promise.race([readBatch(body, tap(), 64 * 1024), sleep(5_000).then(() => 'still waiting')])).rejects.toThrow();
  });

  it('a body whose last chunk fills a batch, all of it in before the reader comes back, ends that way instead of as a premature close', async () => {
    // Exactly two batches, the end already in: as when a reader writing its first batch to a slow
    // disk finds the rest of the answer, and its end, waiting. The stream then emits 'end' between
    // two batches, with nobody listening, and closes itself.
    const image = jpeg(2 * 64 * 1024);
    const body = new Readable({ read() {} });
    for (let at = 0; at < image.length; at += 8192) body.push(image.subarray(at, at + 8192));
    body.push(null);
    const t = tap();
    const first = await readBatch(body, t, 64 * 1024);
    const second = await readBatch(body, t, 64 * 1024);
    expect([first.bytes, first.ended, second.bytes]).toEqual([64 * 1024, false, 64 * 1024]);
    const last = second.ended ? second : await readBatch(body, t, 64 * 1024);
    expect(last.ended).toBe(true);
    expect(Buffer.concat([...first.chunks, ...second.chunks, ...(last === second ? [] : last.chunks)])).toEqual(image);
    expect(t.verdict()).toEqual({ type: 'jpeg' });
  });

  it('a body larger than the cap fails at the chunk that crosses it', async () => {
    const body = await answer(jpeg(150_000));
    const small = new ImageTap(50_000, (n) => new Error(`too large: ${n}`));
    await expect(readBatch(body, small, 1 << 20)).rejects.toThrow(/too large/);
    body.destroy();
  });
});
