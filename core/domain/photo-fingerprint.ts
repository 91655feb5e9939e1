/**
 * Whether a photo is a picture already sent: the same picture resized, re-encoded, lightly cropped
 * or mirrored (issue 32, "no recycled photos"). Two steps, as near-duplicate search does it:
 * - a 64-bit perceptual hash (the signs of a 32 × 32 grey thumbnail's lowest 8 × 8 DCT frequencies
 *   against their median) and a coarse picture (coarseOf) find candidates: resizing and re-encoding
 *   move the hash by 0 to 4 bits, a crop of 2% off each side by 6 (14 at most), 5% off one side or
 *   4% off each side by up to 16 (measured on every 20th of the 4,637 photos of ../shared/datasets);
 * - a candidate is the same picture only if one thumbnail is the other cut by up to CROP_SEARCH off
 *   each side: the best normalised correlation of their grey over those cuts must reach
 *   SAME_PICTURE, and their colours at that cut agree (onePicture).
 * Plain functions over numbers: capture computes fingerprints (capture/photos/fingerprint.ts), the
 * controller compares them (core/operations/photo-index.ts).
 */

/** A photo's fingerprint: its hash and its mirror image's (16 hex digits each), its grey thumbnail and its colour one (RGB). */
export type Fingerprint = { hash: string; mirrorHash: string; thumb: Uint8Array; colour: Uint8Array };

/** Thumbnails are THUMB × THUMB grey pixels of the whole frame. */
export const THUMB = 32;
/** A candidate's hash lies within this many bits of the photo's (or its mirror image's). */
export const CANDIDATE_BITS = 20;
/** How much of each side one picture may have lost to the other's crop: 6%. */
const CROP_SEARCH = [0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06];
/** The correlation two grey thumbnails of one picture reach at their best alignment. */
export const SAME_PICTURE = 0.95;
/** How far apart (mean of 0-255 levels) one picture's colour thumbnails may be at that alignment. */
export const COLOUR_WITHIN = 8;

/**
 * A picture's coarse likeness, what the index keeps of every photo in memory (core/operations/photo-index.ts):
 * its grey at 8 × 8 and its colour at 4 × 4 (block means of the thumbnails), 112 bytes. Of the photos
 * whose hash is within CANDIDATE_BITS, most are other pictures of the same kind of scene (a car
 * from the front, in a street); these pass over them without reading their fingerprints.
 */
export type Coarse = { grey: Uint8Array; colour: Uint8Array };
/** Grey blocks of one picture correlate at least this, uncut (measured: 0.726 at the least, for a photo lost 5% off one side, 0.884 at the 1st percentile). */
const COARSE_LIKENESS = 0.6;
/** Colour blocks of one picture are at most this far apart, uncut (measured: 19.2 at the most, 9.5 at the 99th percentile). */
const COARSE_COLOUR = 28;
/** The coarse grey's side and the coarse colour's. */
export const COARSE_GREY = 8;
export const COARSE_COLOUR_SIDE = 4;

/** Block means of a THUMB × THUMB thumbnail with `channels` interleaved, `side` × `side` blocks. */
function blocks(thumb: Uint8Array, channels: number, side: number): Uint8Array {
  const k = THUMB / side;
  const sums = new Float64Array(side * side * channels);
  for (let y = 0; y < THUMB; y++)
    for (let x = 0; x < THUMB; x++)
      for (let c = 0; c < channels; c++)
        sums[(Math.floor(y / k) * side + Math.floor(x / k)) * channels + c]! += thumb[(y * THUMB + x) * channels + c]!;
  return Uint8Array.from(sums, (v) => Math.round(v / (k * k)));
}

export const coarseOf = (f: Pick<Fingerprint, "thumb" | "colour">): Coarse => ({
  grey: blocks(f.thumb, 1, COARSE_GREY),
  colour: blocks(f.colour, 3, COARSE_COLOUR_SIDE),
});

/** Whether two coarse pictures may be one, before their thumbnails are read and compared (samePicture). */
export function mayBeOnePicture(a: Coarse, b: Coarse): boolean {
  let apart = 0;
  for (let i = 0; i < a.colour.length; i++) apart += Math.abs(a.colour[i]! - b.colour[i]!);
  return apart / a.colour.length <= COARSE_COLOUR && correlation(a.grey, b.grey) >= COARSE_LIKENESS;
}

/** A hash (16 hex digits) as its two 32-bit halves, the form the index holds hashes in. */
export const halves = (hash: string): [number, number] => [
  Number.parseInt(hash.slice(0, 8), 16) >>> 0,
  Number.parseInt(hash.slice(8), 16) >>> 0,
];

/** The bits set in a 32-bit number (SWAR popcount). */
export function bitCount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The number of bits two hashes differ in. */
export function hamming(a: string, b: string): number {
  const [[aHi, aLo], [bHi, bLo]] = [halves(a), halves(b)];
  return bitCount((aHi ^ bHi) >>> 0) + bitCount((aLo ^ bLo) >>> 0);
}

/** A thumbnail seen in a mirror. */
export function mirrored(thumb: Uint8Array): Uint8Array {
  const out = new Uint8Array(thumb.length);
  for (let y = 0; y < THUMB; y++) for (let x = 0; x < THUMB; x++) out[y * THUMB + x] = thumb[y * THUMB + (THUMB - 1 - x)]!;
  return out;
}

/** The part of a thumbnail inside [l, 1 - r] × [t, 1 - b], resampled (bilinear) to a whole thumbnail. */
function cut(thumb: Uint8Array, l: number, t: number, r: number, b: number): Float64Array {
  const out = new Float64Array(THUMB * THUMB);
  const sx = (1 - l - r) * THUMB;
  const sy = (1 - t - b) * THUMB;
  for (let y = 0; y < THUMB; y++) {
    const fy = Math.min(THUMB - 1, Math.max(0, t * THUMB + ((y + 0.5) * sy) / THUMB - 0.5));
    const y0 = Math.floor(fy);
    const y1 = Math.min(THUMB - 1, y0 + 1);
    const wy = fy - y0;
    for (let x = 0; x < THUMB; x++) {
      const fx = Math.min(THUMB - 1, Math.max(0, l * THUMB + ((x + 0.5) * sx) / THUMB - 0.5));
      const x0 = Math.floor(fx);
      const x1 = Math.min(THUMB - 1, x0 + 1);
      const wx = fx - x0;
      const top = thumb[y0 * THUMB + x0]! * (1 - wx) + thumb[y0 * THUMB + x1]! * wx;
      const bottom = thumb[y1 * THUMB + x0]! * (1 - wx) + thumb[y1 * THUMB + x1]! * wx;
      out[y * THUMB + x] = top * (1 - wy) + bottom * wy;
    }
  }
  return out;
}

function correlation(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = a.length;
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a[i]!;
    mb += b[i]!;
  }
  ma /= n;
  mb /= n;
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < n; i++) {
    const da = a[i]! - ma;
    const db = b[i]! - mb;
    ab += da * db;
    aa += da * da;
    bb += db * db;
  }
  return aa === 0 || bb === 0 ? 0 : ab / Math.sqrt(aa * bb);
}

type Sides = [number, number, number, number];
type Fit = { score: number; sides: Sides };

/**
 * The best correlation of `small` with `whole` cut by up to CROP_SEARCH off each side, and that cut,
 * found a side at a time (three rounds over the four sides: 84 cuts, not all 2,401; the sides of a
 * crop barely depend on each other at this size).
 */
function bestCut(whole: Uint8Array, small: Uint8Array): Fit {
  const sides: Sides = [0, 0, 0, 0];
  let score = correlation(cut(whole, ...sides), small);
  for (let round = 0; round < 3; round++)
    for (let side = 0; side < 4; side++)
      for (const v of CROP_SEARCH) {
        const tried = sides.with(side, v) as Sides;
        const c = correlation(cut(whole, ...tried), small);
        if (c > score) {
          score = c;
          sides[side] = v;
        }
      }
  return { score, sides };
}

/** How alike two photos' pictures are at their best alignment (either may be the other cropped), 0 to 1. */
export function likeness(a: Uint8Array, b: Uint8Array): number {
  return Math.max(bestCut(a, b).score, bestCut(b, a).score);
}

/** The colour thumbnail's planes (R, G, B), each THUMB × THUMB. */
const planes = (colour: Uint8Array): Uint8Array[] =>
  [0, 1, 2].map((c) => Uint8Array.from({ length: THUMB * THUMB }, (_, i) => colour[i * 3 + c]!));

/** Colour is compared on blocks of POOL × POOL pixels: the fine texture of a close-up, a fraction of a pixel off, is not a colour. */
const POOL = 4;

/** The mean difference, 0 to 255, of two colour thumbnails' block colours, with `whole` cut by `sides`. */
function colourApart(whole: Uint8Array, small: Uint8Array, sides: Sides): number {
  const [w, s] = [planes(whole), planes(small)];
  const blocks = THUMB / POOL;
  let sum = 0;
  for (let c = 0; c < 3; c++) {
    const cutPlane = cut(w[c]!, ...sides);
    const apart = new Float64Array(blocks * blocks);
    for (let y = 0; y < THUMB; y++)
      for (let x = 0; x < THUMB; x++)
        apart[Math.floor(y / POOL) * blocks + Math.floor(x / POOL)]! += cutPlane[y * THUMB + x]! - s[c]![y * THUMB + x]!;
    for (const d of apart) sum += Math.abs(d) / (POOL * POOL);
  }
  return sum / (3 * blocks * blocks);
}

/** A colour thumbnail seen in a mirror. */
export function mirroredColour(colour: Uint8Array): Uint8Array {
  const out = new Uint8Array(colour.length);
  for (let y = 0; y < THUMB; y++)
    for (let x = 0; x < THUMB; x++)
      for (let c = 0; c < 3; c++) out[(y * THUMB + x) * 3 + c] = colour[(y * THUMB + (THUMB - 1 - x)) * 3 + c]!;
  return out;
}

/**
 * Whether two pictures are one: their grey thumbnails correlate to SAME_PICTURE at the best cut of
 * either, and at that cut their colours are within COLOUR_WITHIN. Correlation alone is blind to
 * colour and to what a backdrop shares: studio photos of two cars of one model on one turntable, or
 * close-ups of two panels against one wall, correlate as well as copies do (the datasets hold 40 such
 * pairs); their colours do not agree.
 */
function onePicture(a: Pick<Fingerprint, "thumb" | "colour">, b: Pick<Fingerprint, "thumb" | "colour">): boolean {
  const { score, colourApart: apart } = alignment(a, b);
  return score >= SAME_PICTURE && apart <= COLOUR_WITHIN;
}

/** Two thumbnails at their best cut: the grey correlation there, and how far apart their colours are there. */
export function alignment(a: Pick<Fingerprint, "thumb" | "colour">, b: Pick<Fingerprint, "thumb" | "colour">) {
  const [ab, ba] = [bestCut(a.thumb, b.thumb), bestCut(b.thumb, a.thumb)];
  const [fit, whole, small] = ab.score >= ba.score ? [ab, a, b] : [ba, b, a];
  return { score: fit.score, colourApart: colourApart(whole.colour, small.colour, fit.sides) };
}

/**
 * Whether `photo` is `earlier`'s picture again: hashes within CANDIDATE_BITS, directly or in a
 * mirror, and one picture (onePicture).
 */
export function samePicture(photo: Fingerprint, earlier: Pick<Fingerprint, "hash" | "thumb" | "colour">): boolean {
  if (hamming(photo.hash, earlier.hash) <= CANDIDATE_BITS && onePicture(photo, earlier)) return true;
  return (
    hamming(photo.mirrorHash, earlier.hash) <= CANDIDATE_BITS &&
    onePicture({ thumb: mirrored(photo.thumb), colour: mirroredColour(photo.colour) }, earlier)
  );
}
