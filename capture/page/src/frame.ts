import { ANALYSIS_SIZE, qualityOfGrey } from "../../../inference/quality/quality-of-grey.ts";
import type { Quality } from "./api.ts";

/** Uploads are at most this on their long side: enough for damage detail, small on a poor connection. */
export const UPLOAD_MAX_SIDE = 2048;

function canvasOf(width: number, height: number): [HTMLCanvasElement, CanvasRenderingContext2D] {
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = height;
  return [canvas, canvas.getContext("2d", { willReadFrequently: true })!];
}

const fit = (w: number, h: number, max: number) => {
  const scale = Math.min(1, max / Math.max(w, h));
  return [Math.round(w * scale), Math.round(h * scale)] as const;
};

/** The server's measures (brightness, Laplacian sharpness, glare), on the frame downscaled to 512 px. */
export function frameQuality(source: CanvasImageSource, width: number, height: number): Quality {
  const [w, h] = fit(width, height, ANALYSIS_SIZE);
  const [, ctx] = canvasOf(w, h);
  ctx.drawImage(source, 0, 0, w, h);
  const rgba = ctx.getImageData(0, 0, w, h).data;
  const grey = new Uint8Array(w * h);
  for (let i = 0, p = 0; p < grey.length; i += 4, p++) {
    grey[p] = Math.round(0.2126 * rgba[i]! + 0.7152 * rgba[i + 1]! + 0.0722 * rgba[i + 2]!);
  }
  return qualityOfGrey(grey, w, h);
}

/** The frame as a JPEG no larger than UPLOAD_MAX_SIDE on its long side. */
export function toJpeg(source: CanvasImageSource, width: number, height: number): Promise<Blob> {
  const [w, h] = fit(width, height, UPLOAD_MAX_SIDE);
  const [canvas, ctx] = canvasOf(w, h);
  ctx.drawImage(source, 0, 0, w, h);
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("encoding failed"))), "image/jpeg", 0.9));
}

/** A photo chosen with the file input, decoded with its EXIF orientation applied. */
export async function decodeFile(file: File): Promise<ImageBitmap> {
  return createImageBitmap(file, { imageOrientation: "from-image" });
}
