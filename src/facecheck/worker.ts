import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import sharp from 'sharp';
import { loadPass, startBackend } from './detector.js';
import { measure, type Passes } from './measure.js';
import type { CheckReply, CheckRequest, WorkerData } from './protocol.js';

// The face check's thread: loads the runtime and the model when it starts (the checker starts it
// at the first image), then measures one image at a time, in the order they come.

/**
 * The detector runs at a lower priority than the daemon's own thread: confined to a quarter of a
 * core (a cgroup's CPU quota is shared by all its threads), `status` and speech would otherwise
 * wait behind it. Linux keeps a nice value per thread; this thread's id is /proc/thread-self's.
 */
function yieldToTheDaemon(): void {
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), WORKER_NICE);
  } catch {
    // not Linux, or not allowed: the check still runs, at the daemon's priority
  }
}

const WORKER_NICE = 10;
const BATCH = 4;
const data = workerData as WorkerData;
yieldToTheDaemon();
// As the console's thumbnails set it (libvips's settings are the process's): no operation cache,
// which kept every decoded photo of a burst (about 30 MB more at the peak), and one thread each.
sharp.cache(false);
sharp.concurrency(1);
const port = parentPort!;

async function load(): Promise<Passes> {
  await startBackend();
  const [near, far] = await Promise.all([
    loadPass(data.modelDir, 'blazeface-front', 128, data.nearScore),
    loadPass(data.modelDir, 'blazeface-back', 256, data.farScore),
  ]);
  return { near, far };
}

const passes = load();
// Reported on the first request; a rejection nobody awaited yet must not end the thread.
passes.catch(() => undefined);
const waiting: CheckRequest[] = [];
const answered: CheckReply[] = [];
let working = false;

async function handle(req: CheckRequest): Promise<CheckReply> {
  let loaded: Passes;
  try {
    loaded = await passes;
  } catch (err) {
    return { id: req.id, error: `the face detector did not load from ${data.modelDir}: ${(err as Error).message}`, kind: 'unavailable' };
  }
  try {
    return { id: req.id, measurements: await measure(req.bytes, loaded) };
  } catch (err) {
    // libvips adds its warnings on further lines: the first says what is wrong.
    return { id: req.id, error: String((err as Error).message).split('\n')[0]!.trim(), kind: 'undecodable' };
  }
}

/**
 * Images in the order they came. The answers go back together when no image waits any more, or
 * BATCH of them: in a burst the daemon then takes several results in one turn of its loop and
 * commits, syncs and uploads them together, as it does with the check off, instead of one by one.
 */
async function work(): Promise<void> {
  working = true;
  while (waiting.length > 0) {
    answered.push(await handle(waiting.shift()!));
    if (waiting.length === 0 || answered.length >= BATCH) port.postMessage(answered.splice(0));
  }
  working = false;
}

port.on('message', (req: CheckRequest) => {
  waiting.push(req);
  if (!working) void work();
});
