import { parentPort, workerData } from 'node:worker_threads';
import { loadPass, startBackend } from './detector.js';
import { measure, type Passes } from './measure.js';
import type { CheckReply, CheckRequest, WorkerData } from './protocol.js';

// The face check's thread: loads the runtime and the model when it starts (the checker starts it
// at the first image), then measures one image at a time, in the order they come.

const data = workerData as WorkerData;
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
let queue: Promise<void> = Promise.resolve();

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

port.on('message', (req: CheckRequest) => {
  queue = queue.then(async () => port.postMessage(await handle(req)));
});
