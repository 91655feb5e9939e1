import type { UploadQuality } from "../../core/schemas/report.ts";

// Pure: no sharp, no Node APIs, because the capture page bundles this file and runs the very same
// measures in the browser before a photo is accepted.

/**
 * Thresholds for a photo to pass, measured on the photo downscaled to 512 px on its long side.
 * Calibrated on real photos (measured 2026-11-27): 397 of the 400 car-parts training photos pass
 * (two white studio shots too bright, a white SUV on a white advert with glare), 795 of the 799
 * car-damage valid photos (three blurry, one too dark); darkened, blurred, blown-out and
 * sun-spotted versions of them fail (test/unit/quality.test.ts). The measures before (the whole
 * frame's mean luminance under 0.20; luma of 250 or more over a quarter of the central half)
 * passed 387 and 790: they failed dark showroom backdrops around a lit car, white studio
 * backdrops and white paint in daylight.
 */
export const QUALITY_THRESHOLDS = {
  /** The brightest tenth of the central half darker than this (0–1): too dark, nothing where the car is is lit. */
  minLitCentre: 0.3,
  /** Mean luminance above this: too bright (washed out). */
  maxBrightness: 0.88,
  /** Variance of the Laplacian below this: blurry. */
  minSharpness: 25,
  /** Share of the central half that is clipped (luma ≥ CLIPPED) and enclosed (below) above this: glare. */
  maxGlare: 0.25,
} as const;

/** Luma this high is clipped: JPEG keeps a level or two of ringing below 255. White paint in daylight sits at 240–253. */
const CLIPPED = 254;

export const ANALYSIS_SIZE = 512;

/** Brightness, sharpness and glare of 8-bit grey pixels; the same measures the capture page runs in the browser. */
export function qualityOfGrey(pixels: Uint8Array, width: number, height: number): UploadQuality {
  let sum = 0;
  for (let i = 0; i < pixels.length; i++) sum += pixels[i]!;
  const brightness = sum / pixels.length / 255;

  // Both measured in the central half of the frame, where the prompt puts the car. Glare is the
  // clipped pixels there that clipped pixels do not join to the frame's edge: a white sky or studio
  // backdrop reaches the edge, a blown-out patch on the body is enclosed by the car.
  const outside = clippedFromEdge(pixels, width, height);
  const histogram = new Uint32Array(256);
  let blown = 0;
  let central = 0;
  for (let y = height >> 2; y < height - (height >> 2); y++) {
    for (let x = width >> 2; x < width - (width >> 2); x++) {
      const i = y * width + x;
      central++;
      histogram[pixels[i]!]!++;
      if (pixels[i]! >= CLIPPED && !outside[i]) blown++;
    }
  }
  const glare = central ? blown / central : 0;
  const litCentre = percentile(histogram, central, 0.9) / 255;

  // Variance of the 4-neighbour Laplacian over the interior pixels.
  let lapSum = 0;
  let lapSq = 0;
  let n = 0;
  for (let y = 1; y < height - 1; y++) {
    const row = y * width;
    for (let x = 1; x < width - 1; x++) {
      const i = row + x;
      const lap = pixels[i - 1]! + pixels[i + 1]! + pixels[i - width]! + pixels[i + width]! - 4 * pixels[i]!;
      lapSum += lap;
      lapSq += lap * lap;
      n++;
    }
  }
  const mean = n ? lapSum / n : 0;
  const sharpness = n ? lapSq / n - mean * mean : 0;

  const t = QUALITY_THRESHOLDS;
  const problems: UploadQuality["problems"] = [];
  if (central > 0 && litCentre < t.minLitCentre) problems.push("too_dark");
  if (brightness > t.maxBrightness) problems.push("too_bright");
  if (sharpness < t.minSharpness) problems.push("blurry");
  if (glare > t.maxGlare) problems.push("glare");
  return {
    brightness: round(brightness, 3),
    sharpness: round(sharpness, 1),
    glare: round(glare, 4),
    passed: problems.length === 0,
    problems,
  };
}

/** The pixels clipped pixels join to the frame's edge (4-connected), marked 1. */
function clippedFromEdge(pixels: Uint8Array, width: number, height: number): Uint8Array {
  const marked = new Uint8Array(pixels.length);
  const stack: number[] = [];
  const visit = (i: number) => {
    if (!marked[i] && pixels[i]! >= CLIPPED) {
      marked[i] = 1;
      stack.push(i);
    }
  };
  for (let x = 0; x < width; x++) {
    visit(x);
    visit((height - 1) * width + x);
  }
  for (let y = 0; y < height; y++) {
    visit(y * width);
    visit(y * width + width - 1);
  }
  while (stack.length > 0) {
    const i = stack.pop()!;
    const x = i % width;
    if (x > 0) visit(i - 1);
    if (x < width - 1) visit(i + 1);
    if (i >= width) visit(i - width);
    if (i < pixels.length - width) visit(i + width);
  }
  return marked;
}

/** The value below which `share` of the `count` values counted in `histogram` lie. */
function percentile(histogram: Uint32Array, count: number, share: number): number {
  const rank = Math.floor(count * share);
  let seen = 0;
  for (let v = 0; v < histogram.length; v++) {
    seen += histogram[v]!;
    if (seen > rank) return v;
  }
  return histogram.length - 1;
}

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
