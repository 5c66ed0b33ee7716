import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';

// BlazeFace (models/face-detector/README.md) on TensorFlow.js's WebAssembly backend: no native
// addon to build per architecture, the same code on amd64 and arm64. Loaded in the check's
// worker thread only (worker.ts), so the daemon's own thread never holds the runtime.
//
// The model gives, for each of 896 anchors (a 16 x 16 grid of 2 and an 8 x 8 grid of 6 at its
// input size, the input size / 16 and / 8 apart), a logit and a box as centre offset from the
// anchor and size, in input pixels (plus 6 landmarks, unused here).

export interface Pass {
  /** The square input side the model takes. */
  side: number;
  /** Lowest sigmoid score taken as a face (chosen on test/fixtures/faces/). */
  minScore: number;
  model: GraphModel;
  /** Anchor centres, x then y, in input pixels. */
  anchors: Float32Array;
  /** The model's input, side x side RGB scaled to -1..1, filled anew for each image (one thread uses it). */
  input: Float32Array;
}

/** A found face in input pixels. */
export interface RawBox {
  cx: number;
  cy: number;
  w: number;
  h: number;
  score: number;
}

const NMS_IOU = 0.3;
/** Anchors of the 16 x 16 grid (2 per cell) and of the 8 x 8 grid (6 per cell), whatever the input side. */
const FINE = 512;
const COARSE = 384;

function anchorsFor(side: number): Float32Array {
  const out: number[] = [];
  for (const [stride, perCell] of [[side / 16, 2], [side / 8, 6]] as const) {
    const cells = Math.ceil(side / stride);
    for (let y = 0; y < cells; y++) {
      for (let x = 0; x < cells; x++) {
        for (let k = 0; k < perCell; k++) out.push((x + 0.5) * stride, (y + 0.5) * stride);
      }
    }
  }
  return Float32Array.from(out);
}

/**
 * The wasm backend, single-threaded: the check is one job among the daemon's, on a small device.
 * Once per thread (tf's engine is the thread's), before the first loadPass.
 */
export async function startBackend(): Promise<void> {
  const wasmDir = dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm'));
  setWasmPaths(`${wasmDir}/`);
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  if (!(await tf.setBackend('wasm'))) throw new Error('the TensorFlow.js WebAssembly backend did not start');
  await tf.ready();
}

export async function loadPass(modelDir: string, name: string, side: number, minScore: number): Promise<Pass> {
  const json = JSON.parse(await readFile(join(modelDir, `${name}.json`), 'utf8')) as {
    format: string; modelTopology: object; weightsManifest: Array<{ paths: string[]; weights: never[] }>;
  };
  const manifest = json.weightsManifest[0]!;
  const bin = await readFile(join(modelDir, manifest.paths[0]!));
  const weightData = bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.byteLength);
  const model = await loadGraphModel({ load: async () => ({ modelTopology: json.modelTopology, weightSpecs: manifest.weights, weightData, format: json.format }) });
  return { side, minScore, model, anchors: anchorsFor(side), input: new Float32Array(side * side * 3) };
}

function iou(a: RawBox, b: RawBox): number {
  const ix = Math.max(0, Math.min(a.cx + a.w / 2, b.cx + b.w / 2) - Math.max(a.cx - a.w / 2, b.cx - b.w / 2));
  const iy = Math.max(0, Math.min(a.cy + a.h / 2, b.cy + b.h / 2) - Math.max(a.cy - a.h / 2, b.cy - b.h / 2));
  const inter = ix * iy;
  return inter / (a.w * a.h + b.w * b.h - inter);
}

/**
 * The faces in an RGB image of at most side x side pixels (`width` x `height`, placed at the top
 * left of the model's input; the rest is black), strongest first, overlapping boxes merged.
 */
export function detect(pass: Pass, rgb: Uint8Array, width: number, height: number): RawBox[] {
  const { side } = pass;
  const input = pass.input.fill(-1);
  for (let y = 0; y < height; y++) {
    for (let i = 0; i < width * 3; i++) input[y * side * 3 + i] = rgb[y * width * 3 + i]! / 127.5 - 1;
  }
  const x = tf.tensor4d(input, [1, side, side, 3]);
  const outputs = pass.model.execute(x);
  x.dispose();
  const list = Array.isArray(outputs) ? outputs : [outputs];
  const data = list.map((t) => ({ shape: t.shape, values: t.dataSync() as Float32Array }));
  for (const t of list) t.dispose();
  // Four outputs: logits and boxes of each grid; told apart by shape (their names vary by conversion).
  const pick = (anchors: number, width: number) => data.find((d) => d.shape[1] === anchors && d.shape[2] === width)?.values;
  const grids = [[FINE, pick(FINE, 1), pick(FINE, 16)], [COARSE, pick(COARSE, 1), pick(COARSE, 16)]] as const;
  const found: RawBox[] = [];
  let anchor = 0;
  for (const [count, logits, boxes] of grids) {
    if (!logits || !boxes) throw new Error(`the face model gave outputs of unexpected shapes: ${data.map((d) => `[${d.shape.join(',')}]`).join(' ')}`);
    for (let i = 0; i < count; i++, anchor++) {
      const score = 1 / (1 + Math.exp(-logits[i]!));
      if (score < pass.minScore) continue;
      const b = i * 16;
      found.push({ cx: boxes[b]! + pass.anchors[anchor * 2]!, cy: boxes[b + 1]! + pass.anchors[anchor * 2 + 1]!, w: boxes[b + 2]!, h: boxes[b + 3]!, score });
    }
  }
  found.sort((a, b) => b.score - a.score);
  const kept: RawBox[] = [];
  for (const box of found) if (kept.every((k) => iou(k, box) < NMS_IOU)) kept.push(box);
  return kept;
}
