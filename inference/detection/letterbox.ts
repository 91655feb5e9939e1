import sharp from "sharp";
import type { Letterbox } from "./postprocess.ts";

export const PAD_GREY = 114;

export type Letterboxed = { chw: Float32Array; lb: Letterbox };

/** Scaled size and padding of a width×height photo fitted into a size×size square. */
export function fit(width: number, height: number, size: number) {
  const scale = Math.min(size / width, size / height);
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  return { w, h, lb: { scale: w / width, padX: Math.floor((size - w) / 2), padY: Math.floor((size - h) / 2), width, height } };
}

/**
 * The photo scaled to fit a size×size square without stretching (phone photos are 4:3 or 16:9),
 * padded with grey, as a CHW float tensor in 0–1. Returns the geometry to map boxes back.
 */
export async function letterbox(image: Buffer, size: number): Promise<Letterboxed> {
  return (await letterboxes(image, [size]))[0]!;
}

/**
 * A photo's pixels scaled for each model's square, not yet padded: interleaved RGB, `fit` in size.
 * What letterboxing needs from the encoded photo; processing gets it from the upload instead of
 * decoding the photo again (see model-input.ts).
 */
export type ScaledPixels = { width: number; height: number; pixels: Buffer[] };

/**
 * The photo letterboxed for several models at once (the damage and the parts model), decoded once:
 * the JPEG decode is most of a letterbox's cost.
 */
export async function letterboxes(image: Buffer, sizes: number[]): Promise<Letterboxed[]> {
  return fromScaled(await scaleForModels(image, sizes), sizes);
}

/**
 * Decodes the photo once and scales it for each size. For one size the decode goes straight to its
 * square. For several it is scaled down only by the power of two that JPEG shrink-on-load gives for
 * free (none for a 640 px photo, 4 for a 2400 px one) and each square is scaled from those pixels, so
 * each model gets the pixels a decode of its own would have given it (the same bytes, at 640 px).
 */
export async function scaleForModels(image: Buffer, sizes: number[]): Promise<ScaledPixels> {
  const input = sharp(image, { failOn: "error", limitInputPixels: 40_000_000 });
  const meta = await input.metadata();
  const width = meta.autoOrient?.width ?? meta.width ?? 0;
  const height = meta.autoOrient?.height ?? meta.height ?? 0;
  if (!width || !height) throw new Error("the image has no size");
  const largest = fit(width, height, Math.max(...sizes));
  const decoded = sizes.length === 1 ? largest : shrunkOnLoad(width, height, largest.w);
  const pixels = await input
    .rotate()
    // Bilinear, as YOLO letterboxing conventionally is; sharp's default Lanczos-3 costs more for no gain at 384 px.
    .resize(decoded.w, decoded.h, { fit: "fill", kernel: "linear" })
    .removeAlpha()
    .toColourspace("srgb")
    .raw()
    .toBuffer();
  return {
    width,
    height,
    pixels: await Promise.all(
      sizes.map(async (size) => {
        const { w, h } = fit(width, height, size);
        return w === decoded.w && h === decoded.h
          ? pixels
          : sharp(pixels, { raw: { width: decoded.w, height: decoded.h, channels: 3 } })
              .resize(w, h, { fit: "fill", kernel: "linear" })
              .raw()
              .toBuffer();
      }),
    ),
  };
}

/** Each size's square tensor from pixels scaled for it; throws if the pixels are not that size. */
export function fromScaled({ width, height, pixels }: ScaledPixels, sizes: number[]): Letterboxed[] {
  return sizes.map((size, k) => {
    const { w, h, lb } = fit(width, height, size);
    const rgb = pixels[k];
    if (!rgb || rgb.length !== w * h * 3) throw new Error(`pixels for ${size} px are ${rgb?.length ?? 0} bytes, expected ${w} × ${h} × 3`);
    return { chw: toChw(rgb, w, h, size, lb), lb };
  });
}

/** The photo's size after JPEG shrink-on-load (1/2, 1/4 or 1/8) towards a target width, and no smaller. */
function shrunkOnLoad(width: number, height: number, targetWidth: number): { w: number; h: number } {
  const shrink = 2 ** Math.max(0, Math.min(3, Math.floor(Math.log2(width / targetWidth))));
  return { w: Math.round(width / shrink), h: Math.round(height / shrink) };
}

/**
 * Interleaved RGB bytes into a size×size CHW float square, the grey border written here rather than
 * by sharp's extend(): padding in libvips cost about a millisecond of CPU on a 4:3 photo, a fifth of
 * the whole letterbox.
 */
function toChw(rgb: Buffer, w: number, h: number, size: number, { padX, padY }: Letterbox): Float32Array {
  const plane = size * size;
  const chw = new Float32Array(3 * plane).fill(PAD_GREY / 255);
  const k = 1 / 255;
  for (let y = 0, i = 0; y < h; y++) {
    for (let p = (y + padY) * size + padX, end = p + w; p < end; i += 3, p++) {
      chw[p] = rgb[i]! * k;
      chw[plane + p] = rgb[i + 1]! * k;
      chw[2 * plane + p] = rgb[i + 2]! * k;
    }
  }
  return chw;
}

export type Region = { left: number; top: number; width: number; height: number };

/**
 * A region of the photo (in its upright pixels) scaled for one model's square, as a tile to look
 * closer at: the same pixels a photo of just that region would give.
 */
export async function scaleRegion(image: Buffer, region: Region, size: number): Promise<ScaledPixels> {
  const { w, h } = fit(region.width, region.height, size);
  const pixels = await sharp(image, { failOn: "error", limitInputPixels: 40_000_000 })
    .rotate()
    .extract(region)
    .resize(w, h, { fit: "fill", kernel: "linear" })
    .removeAlpha()
    .toColourspace("srgb")
    .raw()
    .toBuffer();
  return { width: region.width, height: region.height, pixels: [pixels] };
}
