import sharp from 'sharp';
import { detect, type Pass, type RawBox } from './detector.js';
import { SHARPNESS_SIDE, type FaceBox, type FaceMeasurements } from './types.js';

// Decoding (sharp) and measuring one image: the faces, then sharpness and exposure on the largest
// face's grey crop scaled to SHARPNESS_SIDE (so that a big photo and a small one of the same face
// measure alike), or exposure of the whole image when there is no face.

/** sharp's own limit is 268 M pixels; a face photo above 50 M pixels is not a face photo. */
const MAX_PIXELS = 50_000_000;
/** Grey levels counted as clipped black and clipped white. */
const DARK = 5;
const BRIGHT = 250;
/** A photo whose long side is more than this times its short side is searched in square tiles (a 4:3 or 3:2 photo is not). */
const WIDE = 1.5;
const MAX_TILES = 4;
/**
 * One face this wide against the long side makes a portrait the near pass has judged alone. The
 * near pass finds faces from about 0.16 of the long side up (measured: a portrait scaled on a
 * 1280 x 960 canvas is found from 170 to 200 px wide); at 0.2, someone beside the person at the
 * same distance, with a face up to a fifth smaller, is still big enough for it to see.
 */
const DOMINANT = 0.2;

export interface Passes {
  /** Faces from about 1/8 of the long side up (BlazeFace front, 128 px): every image. */
  near: Pass;
  /** Faces down to about 1/16 of the long side (BlazeFace back, 256 px): unless `near` found a portrait or a group. */
  far: Pass;
}

const decoder = (bytes: Uint8Array) => sharp(bytes, { limitInputPixels: MAX_PIXELS, failOn: 'error' }).rotate();

/**
 * The far pass's input, decoded from the image (EXIF orientation applied) straight to its size, so
 * that a JPEG shrinks while it decodes: fit inside side x side; a wide one (long side over short
 * above WIDE) gets its short side to `side` instead, for farPass's tiles, and at most MAX_TILES sides along.
 */
async function decodeFar(bytes: Uint8Array, width: number, height: number, side: number): Promise<Scaled> {
  const aspect = Math.max(width, height) / Math.max(1, Math.min(width, height));
  const fit = aspect <= WIDE ? { width: side, height: side, fit: 'inside' as const }
    : aspect <= MAX_TILES ? { width: side, height: side, fit: 'outside' as const }
    : { width: side * MAX_TILES, height: side * MAX_TILES, fit: 'inside' as const };
  const { data, info } = await decoder(bytes).resize(fit).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  return { rgb: data, width: info.width, height: info.height };
}

/**
 * The near pass's input: the far one's fit inside side x side. A 4:3, 3:4 or square photo's is
 * exactly half of it, each pixel the mean of four, done here rather than in one more round trip to
 * sharp's threads; any other size (3:2, 16:9, wide) goes through sharp.
 */
async function nearInput(far: Scaled, side: number): Promise<Scaled> {
  const width = far.width / 2;
  const height = far.height / 2;
  if (Math.max(width, height) !== side || !Number.isInteger(width) || !Number.isInteger(height)) {
    const { data, info } = await sharp(far.rgb, { raw: { width: far.width, height: far.height, channels: 3 } }).resize({ width: side, height: side, fit: 'inside' }).raw().toBuffer({ resolveWithObject: true });
    return { rgb: data, width: info.width, height: info.height };
  }
  const rgb = new Uint8Array(width * height * 3);
  const row = far.width * 3;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const from = y * 2 * row + x * 6;
      for (let c = 0; c < 3; c++) {
        rgb[(y * width + x) * 3 + c] = (far.rgb[from + c]! + far.rgb[from + 3 + c]! + far.rgb[from + row + c]! + far.rgb[from + row + 3 + c]! + 2) >> 2;
      }
    }
  }
  return { rgb, width, height };
}

/**
 * The far pass over the whole image, or over square tiles half a tile apart along a wide one (a
 * row of people shrunk whole into the model's input would leave each face a few pixels wide).
 */
function farPass(pass: Pass, img: Scaled): RawBox[] {
  const { side } = pass;
  if (img.width <= side && img.height <= side) return detect(pass, img.rgb, img.width, img.height);
  const across = img.width > img.height;
  const long = across ? img.width : img.height;
  const out: RawBox[] = [];
  const tile = new Uint8Array(side * side * 3);
  for (let start = 0; ; start = Math.min(start + side / 2, long - side)) {
    const w = across ? side : img.width;
    const h = across ? img.height : side;
    for (let y = 0; y < h; y++) {
      const from = ((across ? y : y + start) * img.width + (across ? start : 0)) * 3;
      tile.set(img.rgb.subarray(from, from + w * 3), y * w * 3);
    }
    for (const b of detect(pass, tile, w, h)) out.push({ ...b, cx: b.cx + (across ? start : 0), cy: b.cy + (across ? 0 : start) });
    if (start >= long - side) return out;
  }
}

/**
 * The face's grey crop scaled to SHARPNESS_SIDE px, cut from the image at its own resolution (a
 * JPEG decodes only down to the face's last row).
 */
async function faceCrop(bytes: Uint8Array, face: FaceBox, width: number, height: number) {
  const left = Math.min(width - 1, Math.floor(face.x));
  const top = Math.min(height - 1, Math.floor(face.y));
  const box = { left, top, width: Math.max(1, Math.min(width - left, Math.round(face.width))), height: Math.max(1, Math.min(height - top, Math.round(face.height))) };
  const { data, info } = await decoder(bytes).extract(box).resize(SHARPNESS_SIDE, SHARPNESS_SIDE, { fit: 'fill' }).removeAlpha().greyscale().raw().toBuffer({ resolveWithObject: true });
  return { grey: data, width: info.width, height: info.height };
}

interface Scaled {
  rgb: Uint8Array;
  width: number;
  height: number;
}

function toBox(b: RawBox, scale: number, imgW: number, imgH: number): FaceBox {
  const x = Math.max(0, (b.cx - b.w / 2) / scale);
  const y = Math.max(0, (b.cy - b.h / 2) / scale);
  const round1 = (v: number) => Math.round(v * 10) / 10;
  return {
    x: round1(x),
    y: round1(y),
    width: round1(Math.min(imgW, (b.cx + b.w / 2) / scale) - x),
    height: round1(Math.min(imgH, (b.cy + b.h / 2) / scale) - y),
    score: Math.round(b.score * 1000) / 1000,
  };
}

function exposure(grey: Uint8Array): Pick<FaceMeasurements, 'brightness' | 'clipped_dark' | 'clipped_bright'> {
  let sum = 0;
  let dark = 0;
  let bright = 0;
  for (const v of grey) {
    sum += v;
    if (v <= DARK) dark++;
    else if (v >= BRIGHT) bright++;
  }
  const n = Math.max(1, grey.length);
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return { brightness: Math.round((sum / n) * 10) / 10, clipped_dark: r(dark / n), clipped_bright: r(bright / n) };
}

/** Variance of the 4-neighbour Laplacian over the crop's interior. */
export function laplacianVariance(grey: Uint8Array, width: number, height: number): number {
  let sum = 0;
  let sq = 0;
  let n = 0;
  for (let y = 1; y < height - 1; y++) {
    for (let x = 1; x < width - 1; x++) {
      const i = y * width + x;
      const l = grey[i - 1]! + grey[i + 1]! + grey[i - width]! + grey[i + width]! - 4 * grey[i]!;
      sum += l;
      sq += l * l;
      n++;
    }
  }
  if (n === 0) return 0;
  const mean = sum / n;
  return Math.round((sq / n - mean * mean) * 10) / 10;
}

function overlap(a: FaceBox, b: FaceBox): number {
  const ix = Math.max(0, Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x));
  const iy = Math.max(0, Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y));
  const inter = ix * iy;
  // Of the smaller box: the two passes' boxes of one face differ in size more than in place.
  return inter / Math.min(a.width * a.height, b.width * b.height);
}

/** One box per face: the strongest of those that cover the same face. */
function mergeBoxes(boxes: FaceBox[]): FaceBox[] {
  const kept: FaceBox[] = [];
  for (const box of boxes.sort((a, b) => b.score - a.score)) if (kept.every((k) => overlap(k, box) < 0.5)) kept.push(box);
  return kept;
}

const luma = (rgb: Uint8Array): Uint8Array => {
  const out = new Uint8Array(rgb.length / 3);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(0.299 * rgb[i * 3]! + 0.587 * rgb[i * 3 + 1]! + 0.114 * rgb[i * 3 + 2]!);
  return out;
};

export async function measure(bytes: Uint8Array, passes: Passes): Promise<FaceMeasurements> {
  // The image's size as shown (the scaled copies keep its aspect; orientation 5 to 8 turns it).
  const meta = await sharp(bytes, { limitInputPixels: MAX_PIXELS }).metadata();
  const turned = (meta.orientation ?? 1) >= 5;
  const width = (turned ? meta.height : meta.width) ?? 0;
  const height = (turned ? meta.width : meta.height) ?? 0;
  // The near pass (a quarter of the far one's work) settles the common case: a portrait, one face
  // of at least DOMINANT of the long side, or several faces. Otherwise the far pass looks for
  // faces down to about 1/16 of the long side, which is what a group photo holds or a photo taken
  // from too far.
  const far = await decodeFar(bytes, width, height, passes.far.side);
  const near = await nearInput(far, passes.near.side);
  let boxes = detect(passes.near, near.rgb, near.width, near.height).map((b) => toBox(b, near.width / width, width, height));
  const portrait = boxes.length === 1 && boxes[0]!.width >= DOMINANT * Math.max(width, height);
  if (boxes.length < 2 && !portrait) boxes = [...boxes, ...farPass(passes.far, far).map((b) => toBox(b, far.width / width, width, height))];
  const faces = mergeBoxes(boxes);
  if (faces.length === 0) return { width, height, faces, ...exposure(luma(far.rgb)) };
  const largest = faces.reduce((a, b) => (b.width > a.width ? b : a));
  const crop = await faceCrop(bytes, largest, width, height);
  return { width, height, faces, sharpness: laplacianVariance(crop.grey, crop.width, crop.height), ...exposure(crop.grey) };
}
